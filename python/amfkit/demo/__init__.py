"""The demo: a gateway to try clients against, and a tour of the codec.

- `app`: the demo gateway (`amfkit serve --demo`, `make run`);
- `services`: its services; `data`: their SQLite tile database; `assets`: its asset
  folder (the file storage article's images, `images`; uploads) and `AssetService`;
- `tour`: the codec on a sample graph and on `fixtures/` (`python -m amfkit.demo`,
  `make demo`).

Importing the package imports none of them.
"""
