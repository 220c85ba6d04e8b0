"""`python -m amfkit.demo [FIXTURES_DIR]`: the codec tour (`amfkit.demo.tour`)."""

import sys

from amfkit.demo.tour import main

sys.exit(main())
