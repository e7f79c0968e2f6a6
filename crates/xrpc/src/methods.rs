//! The method table the service-auth rules read: which methods no
//! service-auth token (nor a proxied call) may be bound to, and which a
//! non-privileged app-password session may not use (the reference PDS's
//! lists). A leaf, so the router (`routes/service_auth.rs`) and the proxy
//! (`proxy.rs`) read one table without importing each other.

/// Methods no service-auth token may be bound to (the reference's list).
const PROTECTED_METHODS: &[&str] = &[
    "com.atproto.admin.sendEmail",
    "com.atproto.identity.requestPlcOperationSignature",
    "com.atproto.identity.signPlcOperation",
    "com.atproto.identity.updateHandle",
    "com.atproto.server.activateAccount",
    "com.atproto.server.confirmEmail",
    "com.atproto.server.createAppPassword",
    "com.atproto.server.deactivateAccount",
    "com.atproto.server.getAccountInviteCodes",
    "com.atproto.server.getSession",
    "com.atproto.server.listAppPasswords",
    "com.atproto.server.requestAccountDelete",
    "com.atproto.server.requestEmailConfirmation",
    "com.atproto.server.requestEmailUpdate",
    "com.atproto.server.revokeAppPassword",
    "com.atproto.server.updateEmail",
];

/// Whether no service-auth token may be bound to `nsid` (nor a proxied
/// call made for it).
pub fn is_protected_method(nsid: &str) -> bool {
    PROTECTED_METHODS.contains(&nsid)
}

/// Whether a non-privileged app-password session may not use `nsid`.
pub fn is_privileged_method(nsid: &str) -> bool {
    nsid.starts_with("chat.bsky.") || nsid == "com.atproto.server.createAccount"
}
