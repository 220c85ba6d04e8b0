"""The bad-input suite: every hostile input is decoded in a child process with a memory
cap and a deadline (see `harness`), so a crash, an abort, a hang or a memory blow-up
fails a test instead of the run."""
