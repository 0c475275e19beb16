//! The engine: running seeds, judging expectations, parallel runs, findability, determinism
//! checks, exhaustive exploration, shrinking and regression files.

pub mod explore;
pub mod regression;
pub mod run;
pub mod shrink;
