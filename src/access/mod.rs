//! What analysts use: the scope a session has entered, the functions of the row-level security
//! policies, and provenance (lineage).

pub mod policy;
pub mod provenance;
pub mod session;
