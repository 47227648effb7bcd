//! him — human input for MCP. Skeleton; roles arrive in the following commits.
fn main() {}
