//! What analysts use: the scope a session has entered (for row-level security), and provenance
//! (lineage).

pub mod provenance;
pub mod session;
