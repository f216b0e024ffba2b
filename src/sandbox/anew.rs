//! A pane's namespaces made or joined and its file system laid out in full (`mounts`): what a
//! launcher does for a pane with no layout template to copy, and what a layout holder does once
//! for the panes that copy its template (`template`).

use super::launch_plan::Plan;

/// The pane's namespaces made or joined, and its file system laid out in full, in the working
/// directory: what a layout holder does once for many panes (`template::holder_main`).
pub(crate) fn lay_out_anew(plan: &Plan) -> Result<(), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("the working directory: {e}"))?;
    lay_out_in(plan, &cwd)
}

pub(crate) fn lay_out_in(plan: &Plan, cwd: &std::path::Path) -> Result<(), String> {
    match plan.net {
        Some(holder) => {
            super::net::join(holder)?;
            super::net::unshare(libc::CLONE_NEWNS)?;
        }
        None => super::net::new_user_namespace(libc::CLONE_NEWNS)?,
    }
    private_mounts()?;
    super::mounts::lay_out(plan, cwd)
}

/// Makes every mount of the new namespace private, so nothing done here reaches the host's.
fn private_mounts() -> Result<(), String> {
    let flags = libc::MS_REC | libc::MS_PRIVATE;
    // SAFETY: the strings are valid C strings; the other pointers are null.
    let r = unsafe {
        libc::mount(c"none".as_ptr(), c"/".as_ptr(), std::ptr::null(), flags, std::ptr::null())
    };
    if r != 0 {
        return Err(format!("mount / private: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
