//! The experiments. They know nothing of output: each returns plain data and
//! reports progress through callbacks; rendering is the `report` crate's job.

pub mod assess;
pub mod backing;
pub mod compress;
pub mod eat;
pub mod fill;
pub mod heap;
pub mod mapping;
pub mod mm;
pub mod noise;
pub mod observe;
pub mod order;
pub mod procsnap;
pub mod rightsize;
pub mod thrash;
pub mod usage;
pub mod wscap;
