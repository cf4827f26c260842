//! Replica placement.
