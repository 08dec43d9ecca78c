//! Running iproute2 (`ip`, `tc`): exit codes checked, stderr carried into the error.

use std::process::Command;

use crate::error::NetemError;

/// Runs `program args...` and returns its stdout, or an error quoting the command and its
/// stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, NetemError> {
    let cmd = std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    tracing::debug!(%cmd, "netem: running");
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| NetemError::Spawn {
            cmd: cmd.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(NetemError::Command {
            cmd,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `program args...` and reads one figure from its stdout with `parse`; an error quoting
/// the command and its output when `parse` finds none (`what` names the figure).
pub fn read<T>(
    program: &str,
    args: &[&str],
    what: &'static str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, NetemError> {
    let out = run(program, args)?;
    parse(&out).ok_or_else(|| NetemError::Output {
        cmd: format!("{program} {}", args.join(" ")),
        what,
        output: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_quotes_command_and_stderr() {
        let e = run("sh", &["-c", "echo nope >&2; exit 3"]).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("sh -c"), "{s}");
        assert!(s.contains("nope"), "{s}");
        assert!(s.contains('3'), "{s}");
    }

    #[test]
    fn missing_program_says_so() {
        let e = run("/nonexistent/ip", &[]).unwrap_err();
        assert!(matches!(e, NetemError::Spawn { .. }));
    }

    #[test]
    fn success_returns_stdout() {
        assert_eq!(run("sh", &["-c", "echo hi"]).unwrap(), "hi\n");
    }
}
