//! Notes over `/v1`, from outside: `memory serve` on a fresh markdown root, every note route
//! sent as a client would send it (`ETag`, `If-Match`, `If-None-Match: *`, `Idempotency-Key`),
//! and what lands on disk is what the routes answer, both ways; and the one history route a
//! note shares with the pair's documents that writes history itself, redacting a revision.

mod common;

use serde_json::{Value, json};

use common::{Answer, Server, request, snapshot, write_config};

const ADA: &str = "/v1/documents/personalities/ada";

async fn send(
    address: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Answer {
    let mut request = request(method, target);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send(address).await.unwrap()
}

fn etag(answer: &Answer) -> String {
    answer.header("etag").expect("an ETag").to_owned()
}

fn code(answer: &Answer) -> String {
    answer.json()["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_note_route_reads_and_writes_what_is_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "[providers.files]\nkind = \"markdown\"\nroot = \"memory\"\nhistory = { keep = 1000 }\n",
    );
    let server = Server::start(&config);
    let at = server.address.as_str();
    let file = dir
        .path()
        .join("memory/personalities/ada/notes/trips/kyoto.md");
    let kyoto = format!("{ADA}/notes/trips/kyoto.md");

    let listed = send(at, "GET", &format!("{ADA}/notes"), &[], None).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json()["notes"], json!([]));
    assert_eq!(listed.json()["folder"], "personalities/ada/notes");
    let missing = send(at, "GET", &kyoto, &[], None).await;
    assert_eq!(
        (missing.status, code(&missing)),
        (404, "note-not-found".into())
    );

    // A write names what it expects: a create, or the version it was made from.
    let text = json!({"text": "# Kyoto\nTemples at dawn."});
    let bare = send(at, "PUT", &kyoto, &[], Some(text.clone())).await;
    assert_eq!(bare.status, 428, "{}", bare.detail());
    assert!(!file.exists(), "a refused write leaves no file");
    let created = send(
        at,
        "PUT",
        &kyoto,
        &[("if-none-match", "*")],
        Some(text.clone()),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.detail());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "# Kyoto\nTemples at dawn.\n"
    );
    let again = send(at, "PUT", &kyoto, &[("if-none-match", "*")], Some(text)).await;
    assert_eq!((again.status, code(&again)), (409, "note-exists".into()));

    let read = send(at, "GET", &kyoto, &[], None).await;
    assert_eq!(read.status, 200);
    assert_eq!(etag(&read), etag(&created));
    assert_eq!(
        read.json()["path"],
        "personalities/ada/notes/trips/kyoto.md"
    );
    assert_eq!(read.json()["store"], "memory");

    // Updates: guarded, keyed, and checked against the route's note.
    let add =
        json!({"updates": [{"action": "add", "store": "memory", "content": "Fushimi Inari."}]});
    let stale = send(
        at,
        "POST",
        &kyoto,
        &[("if-match", "\"not-the-version\"")],
        Some(add.clone()),
    )
    .await;
    assert_eq!(stale.status, 412, "{}", stale.detail());
    let keyed = [
        ("if-match", etag(&read)),
        ("idempotency-key", "trip-1".into()),
    ];
    let keyed: Vec<(&str, &str)> = keyed.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let first = send(at, "POST", &kyoto, &keyed, Some(add.clone())).await;
    assert_eq!(first.status, 200, "{}", first.detail());
    let resent = send(at, "POST", &kyoto, &keyed, Some(add)).await;
    assert_eq!(resent.status, 200);
    assert_eq!(resent.header("idempotent-replayed"), Some("true"));
    let on_disk = std::fs::read_to_string(&file).unwrap();
    assert_eq!(on_disk.matches("Fushimi Inari.").count(), 1, "{on_disk}");
    for (body, why) in [
        (
            json!({"updates": [{"action": "add", "store": "user", "content": "x"}]}),
            "store \"user\"",
        ),
        (
            json!({"updates": [{"action": "add", "store": "memory", "note": "other.md", "content": "x"}]}),
            "another note",
        ),
        (
            json!({"updates": [{"action": "rename", "store": "memory", "note": "trips/kyoto.md", "to": "x.md"}]}),
            "rename route",
        ),
    ] {
        let refused = send(at, "POST", &kyoto, &[], Some(body)).await;
        assert_eq!(refused.status, 422, "{why}: {}", refused.detail());
        assert!(refused.detail().contains(why), "{}", refused.detail());
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), on_disk);

    // A hand edit is what the routes read next.
    std::fs::write(
        &file,
        "# Kyoto\nTemples at dawn.\nFushimi Inari.\nBy hand.\n",
    )
    .unwrap();
    let listed = send(at, "GET", &format!("{ADA}/notes?prefix=trips/"), &[], None).await;
    let notes = listed.json()["notes"].clone();
    assert_eq!(notes.as_array().unwrap().len(), 1, "{notes}");
    assert_eq!(notes[0]["path"], "trips/kyoto.md");
    assert_eq!(notes[0]["description"], "Kyoto");
    assert_eq!(notes[0]["bytes"], 49);
    let read = send(at, "GET", &kyoto, &[], None).await;
    assert!(read.json()["text"].as_str().unwrap().contains("By hand."));
    assert_eq!(notes[0]["version"], read.json()["version"]);

    // Rename: atomic, refused onto a note that exists; the new path's report.
    let osaka = format!("{ADA}/notes/trips/osaka.md");
    let other = send(
        at,
        "PUT",
        &osaka,
        &[("if-none-match", "*")],
        Some(json!({"text": "Other."})),
    )
    .await;
    assert_eq!(other.status, 200);
    let rename = format!("{ADA}/rename/notes/trips/kyoto.md");
    let onto = send(
        at,
        "POST",
        &rename,
        &[],
        Some(json!({"to": "trips/osaka.md"})),
    )
    .await;
    assert_eq!((onto.status, code(&onto)), (409, "note-exists".into()));
    let nara = format!("{ADA}/notes/trips/nara.md");
    let moved = send(
        at,
        "POST",
        &rename,
        &[],
        Some(json!({"to": "trips/nara.md"})),
    )
    .await;
    assert_eq!(moved.status, 200, "{}", moved.detail());
    let read = send(at, "GET", &nara, &[], None).await;
    assert_eq!(etag(&read), etag(&moved), "the report is the new path's");
    assert!(read.json()["text"].as_str().unwrap().contains("By hand."));
    assert_eq!(send(at, "GET", &kyoto, &[], None).await.status, 404);
    assert!(!file.exists());
    // A folder of notes, or a path under a note, holds no note.
    for (folder, under) in [("trips", "trips/nara.md/x.md")] {
        for path in [folder, under] {
            let read = send(at, "GET", &format!("{ADA}/notes/{path}"), &[], None).await;
            assert_eq!(
                (read.status, code(&read)),
                (404, "note-not-found".into()),
                "{path}"
            );
        }
    }

    // Delete is a revision; revert brings the note back.
    let deleted = send(at, "DELETE", &nara, &[], None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.detail());
    assert_eq!(send(at, "GET", &nara, &[], None).await.status, 404);
    assert_eq!(send(at, "DELETE", &nara, &[], None).await.status, 404);
    let history = format!("{ADA}/revisions/notes/trips/nara.md");
    let revisions = send(at, "GET", &format!("{history}?text=true"), &[], None).await;
    assert_eq!(revisions.status, 200, "{}", revisions.detail());
    let revisions = revisions.json()["revisions"].clone();
    assert_eq!(
        revisions.as_array().unwrap().len(),
        2,
        "the arrival and the delete: {revisions}"
    );
    let arrival = revisions[1]["number"].as_u64().unwrap();
    let one = send(
        at,
        "GET",
        &format!("{ADA}/revisions/{arrival}/notes/trips/nara.md"),
        &[],
        None,
    )
    .await;
    assert_eq!(one.status, 200);
    assert!(one.json()["text"].as_str().unwrap().contains("By hand."));
    let diff = send(
        at,
        "GET",
        &format!("{ADA}/diff/notes/trips/nara.md"),
        &[],
        None,
    )
    .await;
    assert_eq!(diff.status, 200);
    assert!(
        diff.json()["diff"].as_str().unwrap().contains("-By hand."),
        "{}",
        diff.json()
    );
    let reverted = send(
        at,
        "POST",
        &format!("{ADA}/revert/notes/trips/nara.md"),
        &[],
        Some(json!({"number": arrival})),
    )
    .await;
    assert_eq!(reverted.status, 200, "{}", reverted.detail());
    let back = std::fs::read_to_string(
        dir.path()
            .join("memory/personalities/ada/notes/trips/nara.md"),
    )
    .unwrap();
    assert!(back.contains("By hand."), "{back}");

    // A user's notes, and a page of revisions whose Link leads to the next.
    let diet = "/v1/documents/users/grace/notes/diet.md";
    let made = send(
        at,
        "PUT",
        diet,
        &[("if-none-match", "*")],
        Some(json!({"text": "Vegetarian."})),
    )
    .await;
    assert_eq!(made.status, 200);
    let mut version = etag(&made);
    for n in 0..3 {
        let body = json!({"updates": [{"action": "add", "store": "user", "content": format!("Entry {n}.")}]});
        let added = send(at, "POST", diet, &[("if-match", &version)], Some(body)).await;
        assert_eq!(added.status, 200, "{}", added.detail());
        version = etag(&added);
    }
    let mut next = Some("/v1/documents/users/grace/revisions/notes/diet.md?limit=2".to_owned());
    let mut seen = 0;
    while let Some(target) = next {
        let page = send(at, "GET", &target, &[], None).await;
        assert_eq!(page.status, 200, "{target}: {}", page.detail());
        seen += page.json()["revisions"].as_array().unwrap().len();
        next = page
            .header("link")
            .and_then(|link| link.strip_prefix('<'))
            .and_then(|link| link.split_once('>'))
            .map(|(target, _)| target.to_owned());
    }
    assert_eq!(seen, 4, "every revision, a page at a time");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("memory/users/grace/notes/diet.md")).unwrap(),
        "Vegetarian.\n\nEntry 0.\n\nEntry 1.\n\nEntry 2.\n"
    );

    // The pair's own routes do not take notes' updates.
    let pair = send(
        at,
        "POST",
        &format!("{ADA}/MEMORY.md/updates"),
        &[],
        Some(json!({"updates": [{"action": "add", "store": "memory", "note": "trips/osaka.md", "content": "x"}]})),
    )
    .await;
    assert_eq!(pair.status, 422, "{}", pair.detail());
}

/// Whether any file under `dir` holds `text`.
fn anywhere(dir: &std::path::Path, text: &str) -> bool {
    snapshot(dir)
        .values()
        .any(|bytes| String::from_utf8_lossy(bytes).contains(text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_of_a_document_or_a_note_is_redacted_and_keeps_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "[providers.files]\nkind = \"markdown\"\nroot = \"memory\"\n",
    );
    let server = Server::start(&config);
    let at = server.address.as_str();
    let memory = format!("{ADA}/MEMORY.md");
    for update in [
        json!({"action": "add", "store": "memory", "content": "Likes tea."}),
        json!({"action": "add", "store": "memory", "content": "Card 4242 4242."}),
        json!({"action": "replace", "store": "memory", "content": "Tea."}),
    ] {
        let body = json!({ "updates": [update] });
        let written = send(at, "POST", &format!("{memory}/updates"), &[], Some(body)).await;
        assert_eq!(written.status, 200, "{}", written.detail());
    }
    let listed = send(at, "GET", &format!("{memory}/revisions"), &[], None).await;
    let kept = listed.json()["revisions"][1].clone();

    // No body; a key names it as any write's does.
    let redact = format!("{memory}/revisions/2/redact");
    let keyed = [("idempotency-key", "redact-2")];
    let redacted = send(at, "POST", &redact, &keyed, None).await;
    assert_eq!(redacted.status, 200, "{}", redacted.detail());
    let entry = redacted.json();
    assert_eq!(
        (&entry["number"], &entry["path"]),
        (&json!(2), &json!("personalities/ada/MEMORY.md"))
    );
    assert!(entry["redacted_at"].is_u64(), "{entry}");
    assert_eq!(
        (&entry["text"], &entry["updates"], &entry["tombstone"]),
        (&Value::Null, &json!([]), &json!(false))
    );
    for field in ["time", "surface", "bytes_after", "sha256_after", "version"] {
        assert_eq!(entry[field], kept[field], "{field} is kept");
    }
    assert!(
        !anywhere(dir.path(), "Card 4242"),
        "the text leaves the disk"
    );
    let resent = send(at, "POST", &redact, &keyed, None).await;
    assert_eq!(resent.status, 200);
    assert_eq!(resent.header("idempotent-replayed"), Some("true"));
    // Once is enough: again, unkeyed, it is answered as it is.
    let again = send(at, "POST", &redact, &[], None).await;
    assert_eq!(again.status, 200, "{}", again.detail());
    assert_eq!(again.json()["redacted_at"], entry["redacted_at"]);

    let listed = send(
        at,
        "GET",
        &format!("{memory}/revisions?text=true&diff=true"),
        &[],
        None,
    )
    .await;
    let revisions = listed.json()["revisions"].clone();
    assert_eq!(
        (&revisions[1]["text"], &revisions[1]["redacted_at"]),
        (&Value::Null, &entry["redacted_at"])
    );
    assert_eq!(
        revisions[0]["text"], "Tea.\n",
        "the revision after it still reads"
    );
    assert_eq!(revisions[0]["redacted_at"], Value::Null);
    let one = send(at, "GET", &format!("{memory}/revisions/2"), &[], None).await;
    assert_eq!((one.status, &one.json()["text"]), (200, &Value::Null));

    // Nothing to restore or compare, and the revision the document holds stays.
    let revert = send(
        at,
        "POST",
        &format!("{memory}/revert"),
        &[],
        Some(json!({"number": 2})),
    )
    .await;
    assert_eq!(
        (revert.status, code(&revert)),
        (404, "revision-not-found".into())
    );
    let diff = send(at, "GET", &format!("{memory}/diff?from=1&to=2"), &[], None).await;
    assert_eq!(
        (diff.status, code(&diff)),
        (404, "revision-not-found".into())
    );
    let before = snapshot(dir.path());
    let in_use = send(
        at,
        "POST",
        &format!("{memory}/revisions/3/redact"),
        &[],
        None,
    )
    .await;
    assert_eq!(
        (in_use.status, code(&in_use), in_use.json()["kind"].as_str()),
        (422, "revision-in-use".into(), Some("refused")),
        "{}",
        in_use.detail()
    );
    for (number, status, why) in [
        ("9", 404, "no revision 9"),
        ("0", 400, "revision 0"),
        ("x", 400, "not a revision number"),
        ("-1", 400, "not a revision number"),
    ] {
        let refused = send(
            at,
            "POST",
            &format!("{memory}/revisions/{number}/redact"),
            &[],
            None,
        )
        .await;
        assert_eq!(refused.status, status, "{number}: {}", refused.detail());
        assert!(refused.detail().contains(why), "{}", refused.detail());
    }
    let read = send(at, "GET", &memory, &[], None).await;
    assert_eq!(read.json()["text"], "Tea.\n");
    assert_eq!(snapshot(dir.path()), before, "nothing written by a refusal");

    // A note's: the operation before its path, as its other history routes have it.
    let kyoto = format!("{ADA}/notes/trips/kyoto.md");
    let created = send(
        at,
        "PUT",
        &kyoto,
        &[("if-none-match", "*")],
        Some(json!({"text": "Door code 1234."})),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.detail());
    let tag = etag(&created);
    let rewritten = send(
        at,
        "PUT",
        &kyoto,
        &[("if-match", &tag)],
        Some(json!({"text": "Temples at dawn."})),
    )
    .await;
    assert_eq!(rewritten.status, 200, "{}", rewritten.detail());
    let note_redact = |number: u64| format!("{ADA}/revisions/{number}/redact/notes/trips/kyoto.md");
    let redacted = send(at, "POST", &note_redact(1), &[], None).await;
    assert_eq!(redacted.status, 200, "{}", redacted.detail());
    assert_eq!(
        redacted.json()["path"],
        "personalities/ada/notes/trips/kyoto.md"
    );
    assert!(redacted.json()["redacted_at"].is_u64());
    assert!(
        !anywhere(dir.path(), "Door code"),
        "the text leaves the disk"
    );
    let malformed = send(
        at,
        "POST",
        &note_redact(1),
        &[("idempotency-key", "two words")],
        None,
    )
    .await;
    assert_eq!(malformed.status, 400, "{}", malformed.detail());
    let in_use = send(at, "POST", &note_redact(2), &[], None).await;
    assert_eq!(
        (in_use.status, code(&in_use)),
        (422, "revision-in-use".into())
    );
    let read = send(at, "GET", &kyoto, &[], None).await;
    assert_eq!(read.json()["text"], "Temples at dawn.\n");
    let missing = send(
        at,
        "POST",
        &format!("{ADA}/revisions/1/redact/notes/trips/none.md"),
        &[],
        None,
    )
    .await;
    assert_eq!(
        (missing.status, code(&missing)),
        (404, "revision-not-found".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_note_paths_are_refused_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "[providers.files]\nkind = \"markdown\"\nroot = \"memory\"\n",
    );
    let server = Server::start(&config);
    let at = server.address.as_str();
    let seeded = send(
        at,
        "PUT",
        &format!("{ADA}/notes/keep.md"),
        &[("if-none-match", "*")],
        Some(json!({"text": "Kept."})),
    )
    .await;
    assert_eq!(seeded.status, 200);
    let before = snapshot(dir.path());
    let body = json!({"text": "Escaped."});
    for path in [
        "..%2FMEMORY.md",
        "%2E%2E/%2E%2E/users/grace/USER.md",
        "a%5Cb.md",
        "MEMORY.md",
        "user.md%00",
        ".hidden.md",
        "a//b.md",
        "CON.md",
        "%EF%BC%8E%EF%BC%8E/USER.md",
        "Keep.md",
        "keep.md/inside.md",
    ] {
        let target = format!("{ADA}/notes/{path}");
        for (method, headers) in [
            ("PUT", vec![("if-none-match", "*")]),
            ("PUT", vec![("if-match", "*")]),
            ("POST", vec![]),
        ] {
            let body = if method == "POST" {
                json!({"updates": [{"action": "create", "store": "memory", "content": "Escaped."}]})
            } else {
                body.clone()
            };
            let answer = send(at, method, &target, &headers, Some(body)).await;
            assert!(
                matches!(answer.status, 400 | 404 | 409 | 422),
                "{method} {path}: {} {}",
                answer.status,
                answer.detail()
            );
        }
        if path == "Keep.md" {
            // keep.md itself may take that name: a rename that changes only the case.
            continue;
        }
        let rename = send(
            at,
            "POST",
            &format!("{ADA}/rename/notes/keep.md"),
            &[],
            Some(json!({"to": path})),
        )
        .await;
        assert!(
            matches!(rename.status, 400 | 409 | 422),
            "rename to {path}: {}",
            rename.status
        );
    }
    assert_eq!(
        snapshot(dir.path()),
        before,
        "nothing written anywhere under the root"
    );
}
