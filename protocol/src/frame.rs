//! Length-prefixed frames: a big-endian i32 size, then that many bytes.
//!
//! The size is checked against `socket.request.max.bytes` before a single byte of the body is
//! buffered, so a hostile prefix (2 GB, negative) costs nothing but the connection.

use bytes::{Buf, Bytes, BytesMut};

/// Why a connection's byte stream is not a valid sequence of frames.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("frame size {size} is negative")]
    NegativeSize { size: i32 },
    #[error("frame size {size} exceeds socket.request.max.bytes={max}")]
    TooLarge { size: i32, max: usize },
}

/// Splits complete frames off the front of a read buffer.
#[derive(Debug, Clone, Copy)]
pub struct FrameDecoder {
    max_frame_bytes: usize,
}

impl FrameDecoder {
    pub fn new(max_frame_bytes: usize) -> Self {
        Self { max_frame_bytes }
    }

    /// The body of the next complete frame, frozen so that decoded `Bytes` fields (record
    /// batches) stay zero-copy slices of it. `Ok(None)` when more bytes are needed;
    /// `needed` then says how many in total the buffer must hold.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        match self.check(buf)? {
            FrameStatus::Complete(len) => {
                buf.advance(4);
                Ok(Some(buf.split_to(len).freeze()))
            }
            FrameStatus::Incomplete { .. } => Ok(None),
        }
    }

    /// Looks at the buffer without consuming anything.
    pub fn check(&self, buf: &[u8]) -> Result<FrameStatus, FrameError> {
        if buf.len() < 4 {
            return Ok(FrameStatus::Incomplete { total_bytes: 4 });
        }
        let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        if size < 0 {
            return Err(FrameError::NegativeSize { size });
        }
        let len = size as usize;
        if len > self.max_frame_bytes {
            return Err(FrameError::TooLarge {
                size,
                max: self.max_frame_bytes,
            });
        }
        if buf.len() - 4 >= len {
            Ok(FrameStatus::Complete(len))
        } else {
            Ok(FrameStatus::Incomplete {
                total_bytes: 4 + len,
            })
        }
    }
}

/// What [`FrameDecoder::check`] found at the front of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameStatus {
    /// A whole frame with a body of this many bytes.
    Complete(usize),
    /// The buffer must hold this many bytes (prefix included) before the frame is whole.
    Incomplete { total_bytes: usize },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(body: &[u8]) -> BytesMut {
        let mut b = BytesMut::new();
        b.extend_from_slice(&(body.len() as i32).to_be_bytes());
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn splits_back_to_back_frames_and_waits_for_partial_ones() {
        let d = FrameDecoder::new(100);
        let mut buf = framed(b"abc");
        buf.extend_from_slice(&framed(b"hello"));
        buf.extend_from_slice(&[0, 0, 0, 9, 1]);
        assert_eq!(d.decode(&mut buf).unwrap().unwrap(), &b"abc"[..]);
        assert_eq!(d.decode(&mut buf).unwrap().unwrap(), &b"hello"[..]);
        assert_eq!(d.decode(&mut buf).unwrap(), None);
        assert_eq!(
            d.check(&buf).unwrap(),
            FrameStatus::Incomplete { total_bytes: 13 }
        );
    }

    #[test]
    fn refuses_oversized_and_negative_sizes_before_buffering() {
        let d = FrameDecoder::new(104_857_600);
        let mut huge = BytesMut::from(&(2_000_000_000i32).to_be_bytes()[..]);
        assert!(matches!(
            d.decode(&mut huge),
            Err(FrameError::TooLarge { .. })
        ));
        let mut neg = BytesMut::from(&(-5i32).to_be_bytes()[..]);
        assert_eq!(
            d.decode(&mut neg),
            Err(FrameError::NegativeSize { size: -5 })
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let d = FrameDecoder::new(32);
            let mut buf = BytesMut::from(&data[..]);
            while let Ok(Some(_)) = d.decode(&mut buf) {}
        }
    }
}
