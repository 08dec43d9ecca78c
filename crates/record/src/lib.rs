//! Recordings of a capture source: each picture with its capture time and damage, so real
//! programs' screens can be measured again and again (issue 14), byte for byte. The format is
//! specified in `spec/PROTOCOL.md` ("Recordings").
//!
//! | file | what |
//! |---|---|
//! | `format.rs` | the file header and one record's layout, and their bounds |
//! | `writer.rs` | pictures in, records out: the damaged rows XORed with the previous picture, LZ4 |
//! | `reader.rs` | records in, pictures out, every length checked before it is used |
//! | `replay.rs` | a recording as a capture source, at its recorded pace or as fast as asked |

mod format;
mod reader;
mod replay;
mod writer;

pub use format::{Header, RecordError, MAGIC, VERSION};
pub use reader::{Frame, Reader};
pub use replay::{FileSource, Pace};
pub use writer::Writer;
