//! Durability of acknowledged writes and exactly-once sync batches across
//! crashes: the real binary is SIGKILLed (three times) while clients send
//! keyed batches, restarted on the same data directory each time, and then
//! every batch is replayed.
//!
//! What the test proves:
//! - No acknowledged write is lost: every batch answered 2xx before the kill
//!   is in the database after the restart, before anything is replayed, and
//!   holds exactly the records its answer named.
//! - A batch is all or nothing across a crash: after the restart each batch
//!   has either all of its records or none of them, and the stock equals the
//!   start minus exactly the removals of the batches that are there.
//! - Each batch applies exactly once: replaying every batch with its key and
//!   identical body returns the saved answer (byte for byte the acknowledged
//!   one) for what was applied, applies what was not, and a second replay of
//!   everything changes nothing.
//!
//! Locations are the witnesses of re-execution: a location create has no
//! natural key, so a batch that ran twice would leave its location names
//! twice (a stock removal alone would not show it, as its submission_id is
//! idempotent by itself). Every removal quantity is distinct, so the stock
//! tells which removals were applied.
//!
//! A SIGKILL keeps what the kernel already holds, so this proves that an
//! answer is sent only after its commit and that recovery keeps every commit;
//! it cannot show fsync against a power cut.
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use pillbox::db::DATABASE_FILE;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

use crate::support::process::{
    DEADLINE, Guard, HttpResponse, free_port, http_request, serve, set_up_household, token_create,
};

/// Batches prepared; each crash round kills the server after 12 to 23 more
/// acknowledgements, so some requests are in flight at every kill and many
/// batches are still unsent after the last one.
const BATCHES: usize = 120;
/// Client threads sending batches at the same time (the writer groups their
/// commits, so a kill often lands between a commit and its answers).
const CLIENTS: usize = 8;
/// SIGKILL and restart this many times before the replay.
const ROUNDS: usize = 3;
/// Acknowledgements per round before the kill: this plus up to this less one.
const KILL_AFTER_MIN: usize = 12;
/// The medication's supply before any batch, in half units.
const START_HALVES: i64 = 2 * 100_000;

/// One queued offline batch, as a phone would persist it: key and body are
/// fixed once and sent identically on every attempt.
struct Batch {
    key: String,
    body: String,
    /// Names of the locations it creates (unique to this batch).
    locations: Vec<String>,
    /// (submission_id, quantity in half units) of each remove_stock.
    removals: Vec<(String, i64)>,
}

impl Batch {
    fn halves(&self) -> i64 {
        self.removals.iter().map(|(_, q)| q).sum()
    }
}

/// Batch `n`: 2 to 4 operations alternating a location create
/// (`batch-<n>-op-<m>`) and a remove_stock of `<4n+m>.5`, a quantity no other
/// operation removes.
fn prepare(n: usize, medication: i64) -> Batch {
    let mut operations = Vec::new();
    let mut locations = Vec::new();
    let mut removals = Vec::new();
    for m in 0..2 + n % 3 {
        if m % 2 == 0 {
            let name = format!("batch-{n}-op-{m}");
            operations.push(json!({"action": "create", "resource_type": "location",
                                   "attributes": {"name": name}}));
            locations.push(name);
        } else {
            let whole = 4 * n + m;
            let submission = pillbox::db::new_portable_id();
            operations.push(
                json!({"action": "remove_stock", "resource_type": "medication",
                                   "id": medication.to_string(),
                                   "attributes": {"quantity": format!("{whole}.5"),
                                                  "reason": "lost",
                                                  "submission_id": submission}}),
            );
            removals.push((submission, 2 * whole as i64 + 1));
        }
    }
    Batch {
        key: format!("crash-batch-{n}-{}", pillbox::db::new_portable_id()),
        body: json!({"batch": {"operations": operations}}).to_string(),
        locations,
        removals,
    }
}

/// A decimal string with at most a half ("99000", "98765.5", "12.50") in
/// half units.
fn to_halves(text: &str) -> i64 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let whole: i64 = whole.parse().unwrap_or_else(|_| panic!("decimal {text:?}"));
    match fraction.trim_end_matches('0') {
        "" => 2 * whole,
        "5" => 2 * whole + 1,
        _ => panic!("{text:?} is not a whole number of halves"),
    }
}

/// What one client saw of its attempt to send a batch before the kill.
#[derive(Debug, Clone)]
enum Fate {
    /// Not taken by a client before the kill.
    Unsent,
    /// The connection was refused: nothing reached the server.
    Refused,
    /// Connected, but no complete answer came back (the server died).
    Lost(String),
    /// A complete answer.
    Answered { status: u16, body: String },
}

struct Client {
    port: u16,
    token: String,
    path: String,
}

impl Client {
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> io::Result<HttpResponse> {
        http_request(self.port, method, path, Some(&self.token), headers, body)
    }

    fn send(&self, batch: &Batch) -> io::Result<HttpResponse> {
        self.request(
            "POST",
            &self.path,
            &[("Idempotency-Key", &batch.key)],
            Some(&batch.body),
        )
    }

    #[track_caller]
    fn get(&self, path: &str) -> Value {
        let response = self
            .request("GET", path, &[], None)
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        assert_eq!(response.status, 200, "GET {path}: {}", response.body);
        response.json()
    }

    /// Every item of a paged list (100 a page).
    fn all(&self, path: &str) -> Vec<Value> {
        let mut items = Vec::new();
        for page in 1.. {
            let got = self.get(&format!("{path}?per_page=100&page={page}"));
            let data = got["data"].as_array().expect("data is a list").clone();
            let total = got["meta"]["total_count"].as_u64().expect("total_count") as usize;
            let empty = data.is_empty();
            items.extend(data);
            if items.len() >= total || empty {
                assert_eq!(
                    items.len(),
                    total,
                    "{path}: every page adds up to the total"
                );
                return items;
            }
            assert!(page < 100, "{path}: too many pages");
        }
        unreachable!()
    }
}

/// The household as the API shows it: location name → portable ids,
/// submission_id → stock removals, and the supply in half units.
#[derive(Debug, PartialEq, Eq)]
struct State {
    locations: BTreeMap<String, Vec<String>>,
    removals: BTreeMap<String, usize>,
    supply: i64,
}

fn state(client: &Client, household: &str, medication: i64) -> State {
    let mut locations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for location in client.all(&format!("/api/v1/households/{household}/locations")) {
        locations
            .entry(location["name"].as_str().unwrap().to_string())
            .or_default()
            .push(location["portable_id"].as_str().unwrap().to_string());
    }
    let medication_path = format!("/api/v1/households/{household}/medications/{medication}");
    let mut removals: BTreeMap<String, usize> = BTreeMap::new();
    for removal in client.all(&format!("{medication_path}/stock_removals")) {
        *removals
            .entry(removal["submission_id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let supply = to_halves(
        client.get(&medication_path)["data"]["current_supply"]
            .as_str()
            .expect("current_supply is a decimal string"),
    );
    State {
        locations,
        removals,
        supply,
    }
}

/// How much of `batch` `state` holds: `Some(true)` all of it exactly once,
/// `Some(false)` none of it; `None` part of it or something twice.
fn applied(state: &State, batch: &Batch) -> Option<bool> {
    let locations: Vec<usize> = batch
        .locations
        .iter()
        .map(|name| state.locations.get(name).map_or(0, Vec::len))
        .collect();
    let removals: Vec<usize> = batch
        .removals
        .iter()
        .map(|(submission, _)| state.removals.get(submission).copied().unwrap_or(0))
        .collect();
    let counts: BTreeSet<usize> = locations.into_iter().chain(removals).collect();
    match counts.into_iter().collect::<Vec<_>>().as_slice() {
        [1] => Some(true),
        [0] => Some(false),
        _ => None,
    }
}

/// The portable ids of the locations a batch answer names, by location name.
fn answered_locations(batch: &Batch, body: &str) -> BTreeMap<String, String> {
    let body: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(body["data"]["applied"], json!(true), "{body}");
    let results: Vec<&Value> = body["data"]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["record_type"] == "Location")
        .collect();
    assert_eq!(results.len(), batch.locations.len(), "{body}");
    batch
        .locations
        .iter()
        .cloned()
        .zip(
            results
                .iter()
                .map(|r| r["record_portable_id"].as_str().unwrap().to_string()),
        )
        .collect()
}

/// The portable ids `state` holds for a batch's locations (each exactly once).
fn stored_locations(state: &State, batch: &Batch) -> BTreeMap<String, String> {
    batch
        .locations
        .iter()
        .map(|name| {
            let ids = &state.locations[name];
            assert_eq!(ids.len(), 1, "{name} exists exactly once: {ids:?}");
            (name.clone(), ids[0].clone())
        })
        .collect()
}

/// One crash round: `CLIENTS` threads take batches from `next` and send them
/// at once; right after the `kill_after`-th acknowledgement of the round the
/// server is SIGKILLed. Each batch taken gets its fate in `fates`.
fn send_until_killed(
    client: Client,
    batches: &Arc<Vec<Batch>>,
    next: &Arc<AtomicUsize>,
    fates: &Arc<Mutex<Vec<Fate>>>,
    server: Guard,
    kill_after: usize,
) -> String {
    let client = Arc::new(client);
    let server = Arc::new(Mutex::new(server));
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let in_flight_at_kill = Arc::new(AtomicUsize::new(0));
    let killed = Arc::new(AtomicBool::new(false));
    let first = next.load(Ordering::SeqCst);
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (client, batches, next, fates, server) = (
                client.clone(),
                batches.clone(),
                next.clone(),
                fates.clone(),
                server.clone(),
            );
            let (acknowledged, in_flight, in_flight_at_kill, killed) = (
                acknowledged.clone(),
                in_flight.clone(),
                in_flight_at_kill.clone(),
                killed.clone(),
            );
            std::thread::spawn(move || {
                let end = Instant::now() + DEADLINE;
                while !killed.load(Ordering::SeqCst) && Instant::now() < end {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= batches.len() {
                        break;
                    }
                    in_flight.fetch_add(1, Ordering::SeqCst);
                    let fate = match client.send(&batches[n]) {
                        Ok(r) => Fate::Answered {
                            status: r.status,
                            body: r.body,
                        },
                        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Fate::Refused,
                        Err(e) => Fate::Lost(e.to_string()),
                    };
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    let ok = matches!(fate, Fate::Answered { status, .. } if (200..300).contains(&status));
                    fates.lock().unwrap()[n] = fate;
                    if ok && acknowledged.fetch_add(1, Ordering::SeqCst) + 1 == kill_after {
                        // Stop new sends first, then kill while the other
                        // clients' requests are on their way.
                        killed.store(true, Ordering::SeqCst);
                        in_flight_at_kill
                            .store(in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
                        server.lock().unwrap().0.kill().expect("SIGKILL the server");
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("client thread");
    }
    assert!(
        killed.load(Ordering::SeqCst),
        "the kill came after {kill_after} acknowledgements, before the clients ran out of batches"
    );
    let mut server = Arc::try_unwrap(server)
        .ok()
        .expect("client threads have ended")
        .into_inner()
        .unwrap();
    let status = server
        .wait_for_exit(DEADLINE)
        .expect("the killed server is gone");
    assert_eq!(status.signal(), Some(9), "died of SIGKILL: {status}");

    let taken = next.load(Ordering::SeqCst).min(batches.len());
    let fates = fates.lock().unwrap();
    let (mut acked, mut lost, mut refused) = (0, Vec::new(), 0);
    for (n, fate) in fates.iter().enumerate().take(taken).skip(first) {
        match fate {
            Fate::Answered { status, body } => {
                assert!(
                    (200..300).contains(status),
                    "batch {n} was answered {status} before the kill: {body}"
                );
                acked += 1;
            }
            Fate::Lost(why) => lost.push(format!("batch {n}: {why}")),
            Fate::Refused => refused += 1,
            Fate::Unsent => unreachable!("batch {n} was taken"),
        }
    }
    assert!(acked >= kill_after, "at least {kill_after} acknowledged");
    format!(
        "batches {first}..{taken}: killed after {kill_after} acknowledgements with \
         {} requests in flight; {acked} acknowledged, {} without an answer {lost:?}, \
         {refused} refused",
        in_flight_at_kill.load(Ordering::SeqCst),
        lost.len()
    )
}

/// After a restart: every batch is all there or not there at all, every
/// acknowledged one is there with the very records its answer named, and
/// nothing else is; returns the batches that are there.
fn check_survivors(
    recovered: &State,
    batches: &[Batch],
    acknowledged: &BTreeMap<usize, String>,
) -> BTreeSet<usize> {
    let mut survived = BTreeSet::new();
    for (n, batch) in batches.iter().enumerate() {
        match applied(recovered, batch) {
            Some(true) => {
                survived.insert(n);
            }
            Some(false) => {}
            None => panic!(
                "batch {n} is partly applied after the crash: locations {:?}, removals {:?}",
                batch
                    .locations
                    .iter()
                    .map(|l| recovered.locations.get(l))
                    .collect::<Vec<_>>(),
                batch
                    .removals
                    .iter()
                    .map(|(s, _)| recovered.removals.get(s))
                    .collect::<Vec<_>>()
            ),
        }
    }
    for (n, body) in acknowledged {
        assert!(
            survived.contains(n),
            "batch {n} was acknowledged but lost in the crash"
        );
        assert_eq!(
            answered_locations(&batches[*n], body),
            stored_locations(recovered, &batches[*n]),
            "batch {n}: the stored locations are the ones acknowledged"
        );
    }
    assert_eq!(
        recovered.locations.values().map(Vec::len).sum::<usize>(),
        survived
            .iter()
            .map(|n| batches[*n].locations.len())
            .sum::<usize>(),
        "no location other than those of the surviving batches"
    );
    assert_eq!(
        recovered.removals.len(),
        survived
            .iter()
            .map(|n| batches[*n].removals.len())
            .sum::<usize>(),
        "no stock removal other than those of the surviving batches"
    );
    assert_eq!(
        recovered.supply,
        START_HALVES - survived.iter().map(|n| batches[*n].halves()).sum::<i64>(),
        "the stock holds exactly the surviving batches' removals"
    );
    survived
}

/// The acknowledged (2xx) answers so far, by batch.
fn acknowledged(fates: &Mutex<Vec<Fate>>) -> BTreeMap<usize, String> {
    fates
        .lock()
        .unwrap()
        .iter()
        .enumerate()
        .filter_map(|(n, fate)| match fate {
            Fate::Answered { status, body } if (200..300).contains(status) => {
                Some((n, body.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn sigkill_mid_batches_loses_no_acknowledged_write_and_replays_apply_exactly_once() {
    let (dir, data, household) = set_up_household();
    let token = token_create(&data, &household, "owner@example.org", &[]);
    token.assert_success();
    let token = token.single_stdout_line().to_string();
    let mut port = free_port();
    let mut server = serve(&data, port, &dir.path().join("serve-0.log"));
    let client = |port| Client {
        port,
        token: token.clone(),
        path: format!("/api/v1/households/{household}/sync/batches"),
    };

    let created = client(port)
        .request(
            "POST",
            &format!("/api/v1/households/{household}/medications"),
            &[],
            Some(
                &json!({"medication": {"name": "Paracetamol 500mg tablets", "dose_amount": "1",
                                       "dose_unit": "tablet", "current_supply": "100000"}})
                .to_string(),
            ),
        )
        .expect("create the medication");
    assert_eq!(created.status, 201, "{}", created.body);
    let medication = created.json()["data"]["id"].as_i64().expect("numeric id");

    let batches: Arc<Vec<Batch>> = Arc::new((0..BATCHES).map(|n| prepare(n, medication)).collect());
    let removal_count: usize = batches.iter().map(|b| b.removals.len()).sum();
    let location_count: usize = batches.iter().map(|b| b.locations.len()).sum();

    // ---- crash rounds: clients send, the server is SIGKILLed mid-stream,
    // restarts on the same data, and what survived is checked ------------
    let next = Arc::new(AtomicUsize::new(0));
    let fates = Arc::new(Mutex::new(vec![Fate::Unsent; BATCHES]));
    let jitter = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as usize;
    let mut survived = BTreeSet::new();
    for round in 0..ROUNDS {
        let kill_after = KILL_AFTER_MIN + (jitter >> (4 * round)) % KILL_AFTER_MIN;
        let report = send_until_killed(client(port), &batches, &next, &fates, server, kill_after);
        eprintln!("durability: crash {}: {report}", round + 1);
        port = free_port();
        server = serve(
            &data,
            port,
            &dir.path().join(format!("serve-{}.log", round + 1)),
        );
        let recovered = state(&client(port), &household, medication);
        let acknowledged = acknowledged(&fates);
        survived = check_survivors(&recovered, &batches, &acknowledged);
        eprintln!(
            "durability: after restart {}: {} batches applied, {} acknowledged, {} committed \
             but never acknowledged so far",
            round + 1,
            survived.len(),
            acknowledged.len(),
            survived.len() - acknowledged.len()
        );
    }
    let client = client(port);
    let acknowledged = acknowledged(&fates);
    let recovered = state(&client, &household, medication);
    assert!(
        survived.len() < BATCHES,
        "some batches were still to apply after the last crash"
    );

    // ---- replay every batch with its key and identical body ---------------
    let mut replies = Vec::with_capacity(BATCHES);
    for (n, batch) in batches.iter().enumerate() {
        let reply = client
            .send(batch)
            .unwrap_or_else(|e| panic!("replay of batch {n}: {e}"));
        assert!(
            (200..300).contains(&reply.status),
            "replay of batch {n}: {} {}",
            reply.status,
            reply.body
        );
        if let Some(body) = acknowledged.get(&n) {
            assert_eq!(
                &reply.body, body,
                "batch {n}: the replay is the saved, acknowledged answer"
            );
        } else if survived.contains(&n) {
            // Committed but never answered: the saved answer names the
            // records already there; nothing ran again.
            assert_eq!(
                answered_locations(batch, &reply.body),
                stored_locations(&recovered, batch),
                "batch {n}: the replay names the records stored before the crash"
            );
        }
        replies.push(reply.body);
    }

    let replayed = state(&client, &household, medication);
    for (n, batch) in batches.iter().enumerate() {
        assert_eq!(
            applied(&replayed, batch),
            Some(true),
            "batch {n} is applied exactly once after the replay"
        );
        let stored = stored_locations(&replayed, batch);
        assert_eq!(answered_locations(batch, &replies[n]), stored, "batch {n}");
        if survived.contains(&n) {
            assert_eq!(
                stored,
                stored_locations(&recovered, batch),
                "batch {n}: the records from before the crash, not new ones"
            );
        }
    }
    assert_eq!(
        replayed.locations.values().map(Vec::len).sum::<usize>(),
        location_count
    );
    assert_eq!(replayed.removals.len(), removal_count);
    assert_eq!(
        replayed.supply,
        START_HALVES - batches.iter().map(Batch::halves).sum::<i64>(),
        "every removal counted exactly once"
    );

    // ---- a second replay of everything changes nothing --------------------
    for (n, batch) in batches.iter().enumerate() {
        let again = client
            .send(batch)
            .unwrap_or_else(|e| panic!("second replay of batch {n}: {e}"));
        assert!((200..300).contains(&again.status), "{}", again.body);
        assert_eq!(again.body, replies[n], "batch {n}: the same saved answer");
    }
    assert_eq!(state(&client, &household, medication), replayed);

    // ---- the database file agrees (after a clean stop) --------------------
    let stopped = Command::new("kill")
        .args(["-TERM", &server.0.id().to_string()])
        .status()
        .expect("run kill");
    assert!(stopped.success());
    let status = server
        .wait_for_exit(DEADLINE)
        .expect("serve stops on SIGTERM");
    assert!(status.success(), "clean stop: {status}");
    drop(server);
    check_database(&data, medication, &batches, location_count, removal_count);
}

/// The tables behind the API: one row per location create and per
/// remove_stock, one saved answer per key, one change-feed entry per
/// location, and an unbroken chain of stock levels from the start.
fn check_database(
    data: &Path,
    medication: i64,
    batches: &[Batch],
    location_count: usize,
    removal_count: usize,
) {
    let conn =
        Connection::open_with_flags(data.join(DATABASE_FILE), OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the database read-only");
    let count = |sql: &str| -> usize {
        conn.query_row(sql, [], |r| r.get::<_, i64>(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}")) as usize
    };
    assert_eq!(
        count("SELECT count(*) FROM locations WHERE deleted_at IS NULL"),
        location_count
    );
    assert_eq!(
        count("SELECT count(DISTINCT name) FROM locations"),
        location_count
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM change_feed WHERE record_portable_id IN (SELECT portable_id FROM locations)"
        ),
        location_count,
        "one change-feed entry per location: no replay wrote one again"
    );
    assert_eq!(count("SELECT count(*) FROM stock_removals"), removal_count);
    assert_eq!(
        count("SELECT count(*) FROM idempotency_keys"),
        batches.len()
    );
    let keys: BTreeSet<String> = conn
        .prepare("SELECT key FROM idempotency_keys")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: BTreeSet<String> = batches.iter().map(|b| b.key.clone()).collect();
    assert_eq!(keys, expected);

    // Each removal took its own quantity from what the previous one left.
    let mut chain = conn
        .prepare(
            "SELECT quantity, supply_before, supply_after FROM stock_removals
             WHERE medication_id = ?1 ORDER BY id",
        )
        .unwrap();
    let rows: Vec<(String, String, String)> = chain
        .query_map([medication], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), removal_count);
    let mut level = START_HALVES;
    for (quantity, before, after) in &rows {
        assert_eq!(to_halves(before), level);
        level -= to_halves(quantity);
        assert_eq!(to_halves(after), level);
    }
    let supply: String = conn
        .query_row(
            "SELECT current_supply FROM medications WHERE id = ?1",
            [medication],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(to_halves(&supply), level);
    assert_eq!(
        level,
        START_HALVES - batches.iter().map(Batch::halves).sum::<i64>()
    );
}
