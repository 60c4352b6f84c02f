//! getrusage(2), in one place: the fault, context-switch and CPU-time counters
//! the workers report.

/// The counters of one getrusage call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub minflt: u64,
    pub majflt: u64,
    /// Voluntary and involuntary context switches.
    pub nvcsw: u64,
    pub nivcsw: u64,
    /// CPU time in user and kernel mode, seconds.
    pub user_s: f64,
    pub sys_s: f64,
}

fn of(who: libc::c_int) -> Usage {
    // SAFETY: rusage is a C struct of integers, for which all-zero bytes are valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer to a struct of the right type.
    if unsafe { libc::getrusage(who, &mut u) } != 0 {
        return Usage::default();
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Usage {
        minflt: u.ru_minflt as u64,
        majflt: u.ru_majflt as u64,
        nvcsw: u.ru_nvcsw as u64,
        nivcsw: u.ru_nivcsw as u64,
        user_s: tv(u.ru_utime),
        sys_s: tv(u.ru_stime),
    }
}

/// This process's counters (all its threads, RUSAGE_SELF).
pub fn process() -> Usage {
    of(libc::RUSAGE_SELF)
}

/// The calling thread's counters (Linux's RUSAGE_THREAD).
pub fn thread() -> Usage {
    of(libc::RUSAGE_THREAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_grow_with_work() {
        let a = process();
        // Touch fresh pages: minor faults.
        let v = vec![1u8; 8 << 20];
        std::hint::black_box(&v);
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(20) {
            std::hint::black_box(spin.elapsed());
        }
        let b = process();
        assert!(b.minflt > a.minflt, "{a:?} {b:?}");
        assert!(b.user_s + b.sys_s > a.user_s + a.sys_s, "{a:?} {b:?}");
        let t = thread();
        assert!(t.minflt > 0 && t.minflt <= b.minflt, "{t:?} {b:?}");
    }
}
