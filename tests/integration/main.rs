//! The integration tests: one binary (`cargo test --test integration`), one module per
//! behaviour, each driving the real `him` binary as browsers, MCP clients and people do.
//! Run one behaviour with `cargo test --test integration <module>::`, for example
//! `cargo test --test integration loopback_form::`.
//!
//! `support` (compiled once for all of them) starts the real binary as Chrome and as an MCP
//! client start it, and holds the rigs: a fresh local user, the SSH lab, the test Synapse,
//! the pseudo-terminal, the loopback HTTP client, the load generator; and [`support::require`],
//! the one rule for what a test does when something it needs is missing (skip with a message,
//! or fail under `HIM_E2E=1`).
//!
//! All of them share one process and `--test-threads`: a test keeps its state in its own
//! runtime directory (`support::runtime_dir`), never in the process's environment or
//! working directory.

mod support;

mod agent_pool_lifecycle;
mod agents_on_other_machines;
mod answering_from_a_phone_over_matrix;
mod ask_from_the_shell;
mod ask_in_the_terminal;
mod bad_input_on_both_links;
mod config_prints_each_clients_snippet;
mod discovery_without_the_environment;
mod docs_agree_with_the_code;
mod doctor_names_each_problem_and_its_fix;
mod elicitation_both_eras;
mod extension_in_real_browsers_and_clients;
mod faults_hosts_agents_and_extensions;
mod hook_answers_in_the_panel;
mod http_access;
mod http_primes_only_sessions_that_expect_it;
mod http_python_client;
mod http_round_trip;
mod http_sessionless;
mod install_writes_each_browsers_manifest;
mod install_writes_the_extension;
mod integral_numbers_go_out_as_integers;
mod late_answers_are_kept;
mod load_many_agents_and_hosts;
mod loopback_form;
mod mcp_tool_surface;
mod permission_prompt_tool;
mod properties_frames_protocol_forms;
mod python_clients_run_their_him_config_snippets;
mod resources_close_themselves;
mod routing_between_agents_and_hosts;
mod runtime_directory_is_private;
mod secrets_stay_with_the_asker;
mod slow_and_stuck_agents;
mod tasks_when_the_client_declares_them;
mod the_host_ends_when_told;
mod tool_arguments_are_checked_by_name;
mod tool_schemas_are_portable;
mod tools_round_trip_through_the_extension;
mod who_is_asking;
