//! When a question goes to the Matrix bridge (issue 25 item 6): the phone rings only when the
//! person is away from the desk. Pure: the pool (`agent/pool.rs`) asks [`due`] whenever what it
//! knows changes (a host's `welcome`, a link that ends, a bridge that links, the away timer).

use std::time::Duration;

/// `HIM_MATRIX`: when a question goes to the Matrix room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatrixRoute {
    /// At once when no browser's host reports its side panel open (none is linked at all: a
    /// CI runner, a cloud box), else once the question has waited this long (`HIM_AWAY_MS`)
    /// without an answer.
    Away(Duration),
    /// Every question, at once.
    Always,
    /// None: Matrix is not used by this agent.
    Never,
}

/// `HIM_AWAY_MS`'s default: a minute without an answer at an open panel.
pub const DEFAULT_AWAY: Duration = Duration::from_secs(60);

impl Default for MatrixRoute {
    fn default() -> MatrixRoute {
        MatrixRoute::Away(DEFAULT_AWAY)
    }
}

/// What one linked browser's host told us: whether it answered our `hello` yet, and whether
/// its side panel is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Browser {
    pub welcomed: bool,
    pub panel_open: bool,
}

/// What the agent knows of the desk: the browsers' hosts linked now, and whether every host,
/// or one whose side panel was open, ended a moment ago (within `HIM_RECONNECT_GRACE_MS`). A
/// service worker that restarts ends its host and starts a new one, whose first word says the
/// panel is closed until the panel page has found the new worker: an open panel is still
/// waited for then.
#[derive(Debug, Clone, Copy)]
pub struct Desk<'a> {
    pub browsers: &'a [Browser],
    pub restarting: bool,
}

/// Whether a question that has waited `waited` goes to the Matrix bridge now, given the
/// desk. A host that has not said `welcome` yet may have an open panel, and so may a browser
/// restarting its host: the question waits for its word, or the grace, or the away time.
pub fn due(route: MatrixRoute, desk: &Desk, waited: Duration) -> bool {
    match route {
        MatrixRoute::Always => true,
        MatrixRoute::Never => false,
        MatrixRoute::Away(after) => {
            let browsers = desk.browsers;
            waited >= after
                || !desk.restarting
                    && browsers.iter().all(|b| b.welcomed)
                    && !browsers.iter().any(|b| b.panel_open)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AWAY: MatrixRoute = MatrixRoute::Away(Duration::from_secs(60));
    const OPEN: Browser = Browser {
        welcomed: true,
        panel_open: true,
    };
    const CLOSED: Browser = Browser {
        welcomed: true,
        panel_open: false,
    };
    const SILENT: Browser = Browser {
        welcomed: false,
        panel_open: false,
    };

    fn at_desk(browsers: &[Browser]) -> Desk<'_> {
        Desk {
            browsers,
            restarting: false,
        }
    }

    #[test]
    fn with_no_browser_the_phone_rings_at_once() {
        assert!(due(AWAY, &at_desk(&[]), Duration::ZERO));
    }

    #[test]
    fn an_open_panel_holds_the_question_until_the_away_time() {
        assert!(!due(
            AWAY,
            &at_desk(&[CLOSED, OPEN]),
            Duration::from_secs(59)
        ));
        assert!(due(
            AWAY,
            &at_desk(&[CLOSED, OPEN]),
            Duration::from_secs(60)
        ));
    }

    #[test]
    fn every_panel_closed_sends_it_at_once() {
        assert!(due(AWAY, &at_desk(&[CLOSED, CLOSED]), Duration::ZERO));
    }

    #[test]
    fn a_host_that_has_not_said_welcome_is_waited_for() {
        assert!(!due(AWAY, &at_desk(&[CLOSED, SILENT]), Duration::ZERO));
        assert!(due(AWAY, &at_desk(&[SILENT]), Duration::from_secs(60)));
    }

    #[test]
    fn a_browser_restarting_its_host_is_waited_for_until_the_away_time() {
        let restarting = Desk {
            browsers: &[],
            restarting: true,
        };
        assert!(!due(AWAY, &restarting, Duration::from_secs(59)));
        assert!(due(AWAY, &restarting, Duration::from_secs(60)));
        assert!(due(MatrixRoute::Always, &restarting, Duration::ZERO));
    }

    #[test]
    fn always_and_never_ignore_the_panels() {
        assert!(due(MatrixRoute::Always, &at_desk(&[OPEN]), Duration::ZERO));
        assert!(!due(
            MatrixRoute::Never,
            &at_desk(&[]),
            Duration::from_secs(3600)
        ));
    }
}
