//! The experiments. They know nothing of output: each returns plain data and
//! reports phases through callbacks; rendering is the `report` crate's job.

pub mod mm;
