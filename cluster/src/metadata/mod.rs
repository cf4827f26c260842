//! KRaft metadata records and the metadata image.
