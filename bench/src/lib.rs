//! Tools for `scripts/bench`: nothing here is part of the broker.
//!
//! - [`sink`]: a discard sink, a Kafka-speaking server that acknowledges Produce without
//!   storing anything and answers Fetch from one in-memory batch. Fed by the same load
//!   generator as the broker, it shows what the client alone can push through this machine:
//!   the honest upper bound for the broker when both share the cores.
//! - [`limits`]: the machine's own ceilings measured in the same run (loopback TCP between two
//!   processes, sequential writes to the data directory with and without fdatasync), so each
//!   broker figure can also be read as a fraction of what the hardware allows.
//! - [`replication_floor`]: what moving the bytes of replication factor 1 and 3 costs the
//!   kernel with no broker around it, the floor under the replication bench's CPU ratio.

pub mod limits;
pub mod replication_floor;
pub mod sink;
