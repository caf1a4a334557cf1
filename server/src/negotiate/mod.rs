//! Content negotiation: which media type a response is encoded in (`Accept`), how a request
//! body is decoded (`Content-Type`), and the transforms `kubectl get` asks for through media
//! type parameters (`as=Table`, `as=PartialObjectMetadata[List]`).

pub mod body;
pub mod media;
pub mod yaml;

pub use body::decode_body;
pub use media::{
    MediaType, Negotiated, OutputFormat, Transform, negotiate_output, negotiate_watch,
};
pub use yaml::yaml_to_json;
