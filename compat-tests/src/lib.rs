//! Harness: start the real samsa binary on a free port with its own data directory.
