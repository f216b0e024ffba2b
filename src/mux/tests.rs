//! Unit tests of the registry: reservations and the tiles they hold.

use super::*;
use crate::layout;

fn sizes(slots: &[Result<Reserved<'_>>]) -> Vec<(u16, u16)> {
    let size = |r: &Reserved<'_>| r.slot.as_ref().map(|s| (s.spec.rows, s.spec.cols)).unwrap();
    slots.iter().map(|r| size(r.as_ref().unwrap())).collect()
}

#[test]
fn panes_reserved_together_get_their_final_tiles() {
    let mux = Mux::default();
    let session = mux.ensure_session("s").unwrap();
    let window = mux.add_window(&session, None).unwrap();
    let Setup { rows, cols, .. } = mux.inner.lock().limits;
    let place = Place::Window { session: &session, window: &window };
    let shell = PaneArgs::shell("/".into());
    let three = mux.reserve(&place, &[shell.clone(), shell.clone(), shell.clone()]);
    let want: Vec<(u16, u16)> =
        layout::tile(3, rows, cols).iter().map(|r| (r.rows, r.cols)).collect();
    assert_eq!(sizes(&three), want);
    // A slot still starting counts: the next pane is sized as the fourth.
    let fourth = mux.reserve(&place, &[PaneArgs::shell("/".into())]);
    let tile = layout::tile(4, rows, cols)[3];
    assert_eq!(sizes(&fourth), [(tile.rows, tile.cols)]);
}

#[test]
fn a_slot_dropped_unstarted_is_given_back() {
    let mux = Mux::default();
    let session = mux.ensure_session("s").unwrap();
    let named = PaneArgs { name: Some("p".into()), ..PaneArgs::shell("/".into()) };
    let place = Place::NewWindow { session: &session, name: None };
    drop(mux.reserve(&place, std::slice::from_ref(&named)));
    let inner = mux.inner.lock();
    assert_eq!(inner.reserved_panes, 0);
    assert!(inner.reserved_names.is_empty());
    assert!(inner.sessions[0].windows.is_empty(), "the window made for it goes too");
}

#[test]
fn a_pane_is_found_by_a_prefix_of_its_id_and_an_ambiguous_one_lists_the_candidates() {
    let mux = Mux::default();
    let sleeper = PaneArgs { command: Some("sleep 30".into()), ..PaneArgs::shell("/".into()) };
    let pane = mux.create_session(None, sleeper).unwrap().pane;
    assert_eq!(mux.pane(&pane.id[..8]).unwrap().id, pane.id);
    assert_eq!(mux.pane(&pane.id[..3]).err().unwrap().code(), "pane_not_found", "too short");
    {
        // Two more ids beside the real one that share its first four characters.
        let mut inner = mux.inner.lock();
        for twin in ["-twin-a", "-twin-b"] {
            inner.panes.insert(format!("{}{twin}", &pane.id[..4]).parse().unwrap(), pane.clone());
        }
    }
    let err = mux.pane(&pane.id[..4]).err().unwrap();
    assert_eq!(err.code(), "invalid_argument");
    assert!(err.message().contains(&*pane.id) && err.message().contains("-twin-b"), "{err:?}");
    assert_eq!(mux.pane(&pane.id[..8]).unwrap().id, pane.id, "a longer prefix tells them apart");
    mux.shutdown();
}
