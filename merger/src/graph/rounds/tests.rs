//! The source scan, one construct per test: what runs at once, what one
//! after another, and what it leaves unplaced.

use super::*;
use crate::graph::tokens::parse;

/// The rounds of one crate of one file, with the macros of `deps`, as one
/// line: a round's calls `, `-separated, the rounds `|`-separated.
fn rounds_with(code: &str, deps: &[&str]) -> String {
    let deps: Vec<Vec<Tree>> = deps.iter().map(|d| parse(d).unwrap()).collect();
    let rounds: Vec<String> = scan(&[parse(code).unwrap()], &deps)
        .into_iter()
        .map(|r| {
            let mut all = r.calls;
            all.extend(r.looped.into_iter().map(|c| format!("{c} (looped)")));
            all.join(", ")
        })
        .collect();
    rounds.join(" | ")
}

fn rounds(code: &str) -> String {
    rounds_with(code, &[])
}

#[test]
fn join_runs_its_calls_at_once() {
    let code = r#"
        async fn handle() {
            let (a, b) = futures::join!(rt::invoke("a", x), rt::invoke("b", y));
            rt::invoke("c", z).await?;
        }"#;
    assert_eq!(rounds(code), "a, b | c");
}

#[test]
fn try_join_rounds_follow_each_other() {
    // compose-post's shape: two fan-outs, one after the other.
    let code = r#"
        async fn handle(req: Request) -> Result<Value, Error> {
            let (id, text) = tokio::try_join!(
                rt::invoke("unique-id", id_req),
                rt::invoke("text-service", text_req),
            )?;
            let text: Text = rt::callee_json("text-service", &text)?;
            tokio::try_join!(
                rt::invoke("store-post", store_req),
                rt::invoke("write-home-timeline", home_req)
            )?;
            Ok(json!({ "post_id": id }))
        }"#;
    assert_eq!(
        rounds(code),
        "unique-id, text-service | store-post, write-home-timeline"
    );
}

#[test]
fn join_all_runs_every_call_it_is_given_at_once() {
    let code = r#"
        async fn handle(ids: Vec<u64>) {
            let posts = futures::future::try_join_all(
                ids.iter().map(|id| invoke("read-post", to_vec(id).unwrap())),
            ).await?;
            invoke("store", vec![]).await?;
        }"#;
    assert_eq!(rounds(code), "read-post | store");
}

#[test]
fn awaited_calls_follow_each_other_in_source_order() {
    // social-graph-follow-with-username's shape, written out: the ids, then the id form.
    let code = r#"
        async fn handle(req: Req) -> Reply {
            let user = invoke("get-user-id", a).await?;
            let followee = invoke("get-user-id", b).await?;
            Ok(invoke("social-graph-follow", to_vec(&by_id)?).await?.to_vec())
        }"#;
    assert_eq!(
        rounds(code),
        "get-user-id | get-user-id | social-graph-follow"
    );
}

/// A call made once per item is looped: awaited in a `for` or `while`
/// loop's body, in a `while` condition, or in a closure a stream runs one
/// item after another; not one `try_join_all` runs at once.
#[test]
fn calls_repeated_per_item_are_looped() {
    for (case, code, want) in [
        (
            "in a loop's body",
            r#"
        async fn handle(ids: Vec<u64>) {
            for id in ids {
                let (a, b) = tokio::join!(invoke("a", id), invoke("b", id));
            }
            while let Some(x) = next() { invoke("c", x).await; }
            invoke("d", y).await;
        }"#,
            "a (looped), b (looped) | c (looped) | d",
        ),
        (
            "in a closure or a while condition",
            r#"
        async fn handle(ids: Vec<u64>) {
            let all: Vec<_> = stream::iter(ids).then(|id| async move { invoke("a", id).await }).collect().await;
            while let Some(x) = invoke("b", y).await.ok() { }
            let posts = try_join_all(ids.iter().map(|id| invoke("c", id))).await;
        }"#,
            "a (looped) | b (looped) | c",
        ),
    ] {
        assert_eq!(rounds(code), want, "{case}");
    }
}

#[test]
fn a_site_whose_name_is_not_readable_is_not_placed() {
    // A name held in a variable: the bitcode may still know it (a constant
    // it propagated); the scan leaves it out, never guesses. A `const` of
    // the crate it reads.
    let code = r#"
        const BACK: &str = "back";
        async fn handle(name: &str) {
            invoke(name, a).await?;
            invoke(BACK, b).await?;
        }"#;
    assert_eq!(rounds(code), "back");
    let sites = BTreeMap::from([("back", 1), ("front", 1)]);
    let kept = reconcile(scan(&[parse(code).unwrap()], &[]), &sites);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].calls, ["back"]);
}

#[test]
fn a_callee_placed_less_often_than_the_bitcode_counts_is_left_out() {
    // The bitcode counts two calls of a (one in code the scan cannot
    // see), and knows nothing of z: a and z leave the rounds.
    let code = r#"async fn h() { join!(invoke("a", x), invoke("b", y)); invoke("z", w).await; }"#;
    let sites = BTreeMap::from([("a", 2), ("b", 1)]);
    let kept = reconcile(scan(&[parse(code).unwrap()], &[]), &sites);
    assert_eq!(
        kept,
        [Round {
            calls: vec!["b".into()],
            looped: Vec::new()
        }]
    );
}

#[test]
fn a_macro_of_another_crate_is_read_where_it_expands() {
    // sn_store::by_usernames!: the callee of the second round is the
    // macro's argument.
    let store = r#"
        #[macro_export]
        macro_rules! by_usernames {
            ($by_id:literal $(, $field:ident: $type:ty)*) => {
                async fn handle(body: Bytes) -> Reply {
                    let (user, followee) = ::tokio::try_join!(
                        invoke("get-user-id", to_vec(&json!({ "username": req.username }))?),
                        invoke("get-user-id", to_vec(&json!({ "username": req.followee_username }))?)
                    )?;
                    $(by_id.insert(stringify!($field).into(), to_value(&req.$field)?);)*
                    Ok(invoke($by_id, to_vec(&by_id)?).await?.to_vec())
                }
            };
        }"#;
    let code = r#"sn_store::by_usernames!("social-graph-follow", timestamp: Option<u64>);
        fmerge_runtime::function!(handle);"#;
    assert_eq!(
        rounds_with(code, &[store]),
        "get-user-id, get-user-id | social-graph-follow"
    );
}

#[test]
fn spawned_tasks_run_at_once_until_something_else_runs() {
    let code = r#"
        async fn handle() {
            let a = tokio::spawn(async move { invoke("a", x).await });
            let b = tokio::spawn(async move { invoke("b", y).await });
            let (a, b) = (a.await?, b.await?);
            invoke("c", z).await?;
        }"#;
    assert_eq!(rounds(code), "a, b | c");
}

#[test]
fn branches_of_if_and_match_are_alternatives() {
    let code = r#"
        async fn handle(x: u8) {
            if x == 0 { invoke("a", p).await?; } else if x == 1 { invoke("b", p).await?; } else { }
            match x {
                0 => invoke("c", p).await?,
                1 => { invoke("d", p).await?; invoke("e", p).await?; }
                _ => {}
            }
        }"#;
    assert_eq!(rounds(code), "a, b | c, d | e");
}

#[test]
fn a_helper_of_the_crate_brings_its_rounds_where_it_is_called() {
    let code = r#"
        async fn lookup(name: &str) -> u64 { invoke("get-user-id", name).await }
        async fn handle() {
            let (a, b) = try_join!(lookup("x"), lookup("y"))?;
            invoke("follow", vec![]).await?;
        }
        #[cfg(test)]
        mod tests { fn t() { invoke("test-only", vec![]); } }"#;
    assert_eq!(rounds(code), "get-user-id, get-user-id | follow");
}

#[test]
fn comments_strings_and_unbalanced_code() {
    let code = r####"
        // invoke("commented", x)
        /* invoke("block", /* nested */ y) */
        async fn handle() { let s = r#"invoke("raw", z)"#; let c = '('; invoke("real", s).await; }"####;
    assert_eq!(rounds(code), "real");
    assert!(parse("fn f() { (").is_err());
    assert!(parse("fn f() }").is_err());
}

#[test]
fn a_buffered_streams_calls_run_at_once_not_one_after_another() {
    // The closure before `buffer_unordered(n)`, and the one given to
    // `for_each_concurrent`, run their calls at once over the items; a
    // stream's `then` still one after another.
    let code = r#"
        async fn handle(ids: Vec<u64>) {
            let got: Vec<_> = stream::iter(ids.clone())
                .map(|id| async move { invoke("a", id).await })
                .buffer_unordered(4)
                .collect()
                .await;
            stream::iter(ids.clone()).for_each_concurrent(8, |id| async move { invoke("b", id).await; }).await;
            let all: Vec<_> = stream::iter(ids).then(|id| async move { invoke("c", id).await }).collect().await;
        }"#;
    assert_eq!(rounds(code), "a | b | c (looped)");
}

#[test]
fn tasks_a_loop_spawns_run_at_once() {
    // One task per item, spawned, then awaited: the calls overlap; a call
    // awaited in the loop's body still waits for the one before.
    let code = r#"
        async fn handle(ids: Vec<u64>) {
            let mut tasks = Vec::new();
            for id in ids.clone() {
                tasks.push(tokio::spawn(async move { invoke("a", id).await }));
            }
            for id in ids {
                invoke("b", id).await;
            }
        }"#;
    assert_eq!(rounds(code), "a | b (looped)");
}
