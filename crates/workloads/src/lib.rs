//! The experiments. They know nothing of output: each returns plain data and
//! reports progress through callbacks; rendering is the `report` crate's job.

pub mod backing;
pub mod compress;
pub mod fill;
pub mod kernels;
pub mod mm;
pub mod noise;
pub mod observe;
pub mod order;
pub mod procsnap;
pub mod usage;
