"""The `amfkit` command line: decode, encode, sol, call, serve, bench (docs/cli.md).

`amfkit.cli.main.main(argv)` runs it in-process and returns the exit status; the console
script and `python -m amfkit` call it. `tree` prints values as indented trees, `jsonio`
converts them to and from JSON, `detect` reads AMF bytes whose framing is not known.
(`main` is deliberately not re-exported here: the name would hide the `main` module.)
"""
