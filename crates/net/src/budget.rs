//! The descriptor budget. Every connection costs a descriptor, and when the process runs out,
//! every listener stops accepting, the flooded one and the quiet ones alike. So the listeners'
//! connection limits are shares of one budget: the open-file limit, less a reserve for
//! everything else (files, the capture, the runtime, the control socket, pipes).

/// Descriptors kept for everything that is not a listener's connection.
pub const RESERVED_DESCRIPTORS: usize = 256;

/// The open-file limit and what the listeners may use of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub nofile: usize,
    /// `nofile - RESERVED_DESCRIPTORS`.
    pub for_connections: usize,
    /// Whether the wanted limits had to be scaled down to fit.
    pub scaled: bool,
}

/// Raises the open-file soft limit to the hard limit (a server holds a descriptor per viewer,
/// device and subscriber, and the usual soft limit of 1024 is reached long before the hard
/// one). Returns the soft limit in force afterwards.
pub fn raise_nofile_limit() -> std::io::Result<usize> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if r.rlim_cur < r.rlim_max {
            let want = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            r = want;
        }
    }
    Ok(usize::try_from(r.rlim_cur).unwrap_or(usize::MAX))
}

/// The listeners' limits within `nofile` descriptors: as wanted when they fit in the budget;
/// otherwise each is scaled down in proportion (at least 1), so every listener keeps a share
/// and none can take the descriptors the others need.
pub fn share_descriptors(wanted: &[usize], nofile: usize) -> (Vec<usize>, Budget) {
    let for_connections = nofile
        .saturating_sub(RESERVED_DESCRIPTORS)
        .max(wanted.len());
    let total: usize = wanted.iter().sum();
    if total <= for_connections {
        let b = Budget {
            nofile,
            for_connections,
            scaled: false,
        };
        return (wanted.to_vec(), b);
    }
    let shares = wanted
        .iter()
        .map(|&w| ((w as u128 * for_connections as u128 / total as u128) as usize).max(1))
        .collect();
    let b = Budget {
        nofile,
        for_connections,
        scaled: true,
    };
    (shares, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn limits_that_fit_are_kept_and_others_are_scaled_down_in_proportion() {
        let (got, b) = share_descriptors(&[256, 8, 256, 10_000, 4], 20_000);
        assert_eq!(got, [256, 8, 256, 10_000, 4]);
        assert!(!b.scaled);
        let (got, b) = share_descriptors(&[256, 8, 256, 10_000, 4], 1024);
        assert!(b.scaled);
        assert_eq!(b.for_connections, 768);
        assert_eq!(got, [18, 1, 18, 729, 1]);
    }

    proptest! {
        /// Whatever is wanted, the shares fit the budget (beyond the one-per-listener floor)
        /// and no listener is left without a connection.
        #[test]
        fn shares_fit(wanted in proptest::collection::vec(1usize..100_000, 1..8), nofile in 0usize..100_000) {
            let (got, b) = share_descriptors(&wanted, nofile);
            prop_assert_eq!(got.len(), wanted.len());
            prop_assert!(got.iter().all(|&g| g >= 1));
            prop_assert!(got.iter().zip(&wanted).all(|(g, w)| g <= w));
            let floor_extra = got.iter().filter(|&&g| g == 1).count();
            prop_assert!(got.iter().sum::<usize>() <= b.for_connections + floor_extra);
        }
    }
}
