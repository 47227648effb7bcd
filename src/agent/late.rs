//! The agent's side of late answers (issue 24): the keep plan each question carries, the
//! kept answer returned when the same question is asked again, and `get_answer` (the MCP
//! tool and `him ask --answer-of`), which collects a kept answer or waits for it.
//!
//! The store is read directly (`wire/keep.rs`; `him serve` and the host are the same user), so
//! a kept answer is collected with no browser connected. Waiting for one that is still
//! open goes over the links: the question is asked again under its id, each host that keeps
//! its card hands it back to this wait (the card stays, no second one), and a host that
//! starts meanwhile gets it too.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::agent::pending::{Parking, Waited};
use crate::agent::pool::{KeepPlan, Pool};
use crate::agent::prepare::Prepared;
use crate::agent::result::{self, AskResult, CallContext, Collect, NOT_CONSENT, Status, Via};
use crate::agent::tools::{ArgError, ToolKind};
use crate::agent::wait::{self, Outcome};
use crate::config::Config;
use crate::form::Form;
use crate::platform::clock::unix_ms;
use crate::wire::keep::{Lookup, Record, Store, rfc3339};
use crate::wire::protocol::AskFrame;

/// The ask tools by name, for a kept question's result.
const TOOLS: [ToolKind; 5] = [
    ToolKind::Text,
    ToolKind::Choice,
    ToolKind::MultiSelect,
    ToolKind::Confirm,
    ToolKind::Form,
];

fn tool_named(name: &str) -> ToolKind {
    TOOLS
        .into_iter()
        .find(|tool| tool.tool_name() == name)
        .unwrap_or(ToolKind::Form)
}

/// How `prepared` is kept should its call end unanswered; `None` when it never is: keeping
/// is off (`HIM_KEEP_MS=0`), or the form has a password field (a password is never written
/// to disk) or is a permission prompt (bound to one call, DESIGN.md §9).
pub fn plan(config: &Config, prepared: &Prepared) -> Option<KeepPlan> {
    let form = &prepared.form;
    if config.keep.is_zero() || form.has_password() || form.permission.is_some() {
        return None;
    }
    Some(KeepPlan {
        store: Store::locate().map_err(|err| err.to_string()),
        tool: prepared.tool.tool_name().into(),
        keep: config.keep,
        from_store: false,
        if_cancelled: true,
        pending: false,
    })
}

/// The same question asked again (same tool and arguments, same agent and project): its
/// kept answer, returned at once and collected; or, while it is still open, the call waits
/// on it under its id (`prepared` takes that id, and `plan` says it came from the store).
pub fn same_again(
    pool: &Pool,
    plan: &mut KeepPlan,
    prepared: &mut Prepared,
    client_elicitation: bool,
) -> Option<AskResult> {
    let store = plan.store.as_ref().ok()?;
    let form = serde_json::to_value(&prepared.form).ok()?;
    let identity = pool.identity();
    let now = unix_ms();
    let record = store.find(
        &plan.tool,
        &form,
        &identity.agent.name,
        prepared.project.as_deref().or(identity.project.as_deref()),
        now,
    )?;
    if record.answer.is_some() {
        // Another collector may have taken it meanwhile: then this call asks anew.
        let Lookup::Answered(record) = store.take(&record.id, now) else {
            return None;
        };
        tracing::info!(id = %record.id, "the same question again: its kept answer");
        return Some(late_result(&record, client_elicitation, true));
    }
    tracing::info!(id = %record.id, "the same question again: waiting on the kept one");
    prepared.ask = AskFrame::encode(
        record.id,
        &prepared.form,
        prepared.timeout.as_millis() as u64,
        prepared.asked_at_ms,
        prepared.project.as_deref(),
    );
    plan.from_store = true;
    None
}

/// The form of a kept question, as its tool made it.
fn form_of(record: &Record) -> Option<(ToolKind, Form)> {
    let tool = tool_named(&record.tool);
    let mut form: Form = serde_json::from_value(record.form.clone()).ok()?;
    form.one_question = tool != ToolKind::Form;
    Some((tool, form))
}

/// The result the ask tool would have given for the kept answer in `record`, marked late;
/// `asked_again`: collected by the same question asked again, whose agent may not know the
/// answer predates this call (`get_answer` names the question it collects, so it does).
pub fn late_result(record: &Record, client_elicitation: bool, asked_again: bool) -> AskResult {
    let Some(((tool, form), kept)) = form_of(record).zip(record.answer.as_ref()) else {
        return unknown(&record.id, "the kept answer could not be read");
    };
    let cx = CallContext {
        tool,
        form: &form,
        question_id: &record.id,
        elapsed_ms: kept.answered_at_ms.saturating_sub(record.asked_at_ms),
        client_elicitation,
    };
    let outcome = wait::judge(&form, kept.to_answer(&record.id));
    let mut result = result::from_outcome(&cx, Via::Extension, outcome);
    // Only the Matrix bridge's host writes who answered (`Relay::kept_answer`).
    if kept.answered_by.is_some() {
        result.via = Via::Matrix;
        result.answered_by = kept.answered_by.clone();
    }
    result::mark_late(result, kept.answered_at_ms, asked_again)
}

/// A form with nothing in it, for a result about no known question.
fn no_form() -> Form {
    Form {
        title: String::new(),
        description: None,
        submit_label: None,
        fields: Vec::new(),
        allow_note: false,
        permission: None,
        one_question: false,
    }
}

fn unknown(id: &str, why: &str) -> AskResult {
    let form = no_form();
    let cx = CallContext {
        tool: ToolKind::Form,
        form: &form,
        question_id: id,
        elapsed_ms: 0,
        client_elicitation: false,
    };
    let mut result = result::unanswered(
        &cx,
        Status::Unknown,
        format!("No answer is kept under this question_id: {why}."),
        format!(
            "{NOT_CONSENT} Ask the person again (the same question, or in chat) if you still \
             need the answer."
        ),
    );
    result.tool = "get_answer".into();
    result
}

fn expired(id: &str) -> AskResult {
    let mut result = unknown(id, "");
    result.status = Status::Expired;
    result.message = "The question was kept for a late answer, but its time (HIM_KEEP_MS) ran \
                      out before the person answered; it is gone now."
        .into();
    result
}

fn pending(record: &Record, form: &Form, tool: ToolKind, collect: Collect) -> AskResult {
    let cx = CallContext {
        tool,
        form,
        question_id: &record.id,
        elapsed_ms: unix_ms().saturating_sub(record.asked_at_ms),
        client_elicitation: false,
    };
    result::unanswered(
        &cx,
        Status::Pending,
        format!(
            "The question is still open in the person's browser (kept until {}); no answer yet.",
            rfc3339(record.until_ms)
        ),
        format!(
            "{NOT_CONSENT} Later, {} again to collect the answer, or ask in chat.",
            collect.how(&record.id)
        ),
    )
}

/// `get_answer(question_id, wait)`: the kept answer to `id` (collected: it is removed), or,
/// while the question is open, a wait up to `wait` for the person's answer; else `pending`,
/// `expired` or `unknown`. A question whose call returned `pending` and that is still open
/// in this process (`parking`) is waited on where it is. A bad id is an argument error.
#[allow(clippy::too_many_arguments)]
pub async fn get_answer(
    pool: &Pool,
    config: &Config,
    id: &str,
    wait: Duration,
    collect: Collect,
    client_elicitation: bool,
    parking: Option<&Parking>,
    cancelled: impl Future<Output = ()>,
) -> Result<AskResult, ArgError> {
    if !crate::platform::random::is_question_id(id) {
        return Err(ArgError {
            argument: "question_id".into(),
            message: "must be the question_id of an earlier result (32 or more lowercase hex \
                      digits)"
                .into(),
        });
    }
    let call_started = Instant::now();
    tokio::pin!(cancelled);
    if let Some(parking) = parking
        && let Some(waited) = parking.wait(id, wait, collect, cancelled.as_mut()).await
    {
        match waited {
            Waited::Open(result) | Waited::Ended(result) | Waited::Cancelled(result) => {
                return Ok(result);
            }
            // Answered meanwhile: the store has it.
            Waited::InStore => {}
        }
    }
    let wait = wait.saturating_sub(call_started.elapsed());
    let store = match Store::locate() {
        Ok(store) => store,
        Err(err) => return Ok(unknown(id, &err.to_string())),
    };
    let record = match store.take(id, unix_ms()) {
        Lookup::Unknown => {
            return Ok(unknown(
                id,
                "it was collected already, or never kept (a question is kept only when its call \
                 ended unanswered after the person saw it)",
            ));
        }
        Lookup::Expired => return Ok(expired(id)),
        Lookup::Answered(record) => {
            return Ok(late_result(&record, client_elicitation, false));
        }
        Lookup::Open(record) => record,
    };
    let Some((tool, form)) = form_of(&record) else {
        return Ok(unknown(id, "the kept question could not be read"));
    };
    if wait.is_zero() {
        return Ok(pending(&record, &form, tool, collect));
    }
    // Asked again under its id: every host that keeps its card hands it to this wait.
    let asked_at_ms = unix_ms();
    let ask = AskFrame::encode(
        id.to_owned(),
        &form,
        wait.as_millis() as u64,
        asked_at_ms,
        record.project.as_deref(),
    );
    let mut question = pool.open(ask).await;
    question.keep_if_unanswered(KeepPlan {
        store: Ok(store),
        tool: tool.tool_name().into(),
        keep: config.keep,
        from_store: true,
        if_cancelled: true,
        pending: false,
    });
    let started = Instant::now();
    let (outcome, host) = question.wait_beside(&form, started + wait, cancelled).await;
    question.close(wait::withdraw_reason(&outcome), host.as_deref());
    Ok(match outcome {
        Outcome::Answered { .. }
        | Outcome::Declined { .. }
        | Outcome::Dismissed
        | Outcome::Invalid(_) => {
            let cx = CallContext {
                tool,
                form: &form,
                question_id: id,
                elapsed_ms: asked_at_ms.saturating_sub(record.asked_at_ms)
                    + started.elapsed().as_millis() as u64,
                client_elicitation,
            };
            // Answered while this call waited: it does not predate the call.
            let result = result::from_outcome(&cx, Via::Extension, outcome);
            result::mark_late(
                result::via_host(&question, host.as_deref(), result),
                unix_ms(),
                false,
            )
        }
        _ => match question.kept() {
            Some(crate::agent::pool::Kept::Failed(why)) => {
                let mut result = pending(&record, &form, tool, collect);
                result.status = Status::Error;
                result.message = format!("The question could not be kept open: {why}.");
                result.next_step = format!("{NOT_CONSENT} Ask again later or in chat.");
                result
            }
            _ => pending(&record, &form, tool, collect),
        },
    })
}
