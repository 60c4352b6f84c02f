//! A control run's mark (report::control), written by `bench controls`.

use super::Control;
use anyhow::Context;
use std::path::Path;

/// Marks the run at `ctl` as `c`'s control run (report::control), unless
/// it is marked already (a run `--resume` kept): a report of it then says
/// so first, wherever it is read.
pub(super) fn mark(c: &Control, ctl: &Path) -> anyhow::Result<()> {
    let path = ctl.join(report::control::FILE);
    if path.symlink_metadata().is_ok() {
        return Ok(());
    }
    let m = report::control::Mark {
        made_by: report::control::MADE_BY.into(),
        control: c.what.into(),
        findings: c
            .ids
            .iter()
            .map(|&(id, role)| report::control::MarkedFinding {
                id: id.into(),
                role: role.word().into(),
                side: role.side().map(String::from),
            })
            .collect(),
    };
    // As root: never through a link, never over what is not ours (record::safe).
    record::safe::write(&path, &serde_json::to_vec_pretty(&m)?).with_context(|| format!("writing {}", path.display()))
}
