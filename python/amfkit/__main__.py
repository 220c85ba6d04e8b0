"""`python -m amfkit`: the command line (`amfkit --help`)."""

import sys

from amfkit.cli.main import main

sys.exit(main())
