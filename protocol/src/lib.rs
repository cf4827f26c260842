//! Kafka wire framing for Samsa.
//!
//! This crate owns the bytes between the socket and the request handlers: the 4-byte size
//! prefix and its limit ([`frame`]), the request header and the checks that must happen
//! before `kafka-protocol` is allowed to decode anything ([`header`]), response framing
//! ([`response`]), and the one table of API versions the broker serves ([`api_table`]).
//! Message bodies themselves are `kafka-protocol`'s structs; nothing here re-implements them,
//! except the translation of the few versions Kafka 4.4 serves beyond that crate ([`newer`])
//! and the streams group APIs it does not know at all ([`streams`]).

pub mod api_table;
pub mod chunk;
pub mod fetch_response;
pub mod frame;
pub mod header;
pub mod newer;
pub mod nulls;
pub mod response;
pub mod streams;

pub use api_table::{supported_range, CONTROLLER_APIS, CONTROLLER_SASL_APIS, SUPPORTED_APIS};
pub use chunk::{Chunk, FileRange};
pub use frame::{FrameDecoder, FrameError};
pub use header::{decode_request, decode_request_served, DecodedRequest, RequestError};
pub use kafka_protocol;
pub use response::{encode_response, EncodeError};
