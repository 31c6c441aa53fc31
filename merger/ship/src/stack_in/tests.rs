//! The merged stack: what merge_into folds, what merged_all keeps.

use super::*;

#[test]
fn a_plans_merged_stack_drops_what_the_plan_drops_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("provider:\n  name: openfaas\nfunctions:\n");
    for f in ["a", "b", "c", "d"] {
        text.push_str(&format!("  {f}:\n    image: x/{f}\n"));
    }
    let path = dir.path().join("stack.yml");
    std::fs::write(&path, text).unwrap();
    let stack = StackIn::load(&path).unwrap();
    // a's group holds b and c; the plan drops b (only a calls it), c
    // stays (another caller, say); d is no member.
    let mut spec = StackSpec::new(vec!["a".into(), "b".into(), "c".into()], "x/a-merged:1");
    spec.deployment
        .requests
        .insert("memory".into(), "40Mi".into());
    let merged = stack
        .merged_all(std::slice::from_ref(&spec), false, &["b".into()])
        .unwrap();
    let doc: Value = serde_yaml_ng::from_str(&merged).unwrap();
    let names: Vec<&str> = doc["functions"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(names, ["a", "c", "d"], "{merged}");
    assert_eq!(doc["functions"]["a"]["image"], "x/a-merged:1");
    assert_eq!(
        doc["functions"]["a"]["requests"]["memory"], "40Mi",
        "{merged}"
    );
    // --remove-callees drops every callee's entry.
    let all = stack.merged_all(&[spec], true, &[]).unwrap();
    assert!(!all.contains("  c:") && all.contains("  d:"), "{all}");
}

#[test]
fn limits_add_up_and_secrets_unite() {
    let e = |name: &str, mem: &str, secret: &str| Entry {
        name: name.into(),
        deployment: Deployment {
            limits: BTreeMap::from([("memory".into(), mem.into())]),
            secrets: vec![secret.into()],
            environment: BTreeMap::from([("REDIS_URL".into(), format!("redis://{name}"))]),
            ..Deployment::default()
        },
        ..Entry::default()
    };
    let mut spec = StackSpec::new(vec!["a".into(), "b".into()], "img:1");
    let notes = merge_into(&mut spec, &[e("a", "128Mi", "s1"), e("b", "64Mi", "s2")]);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(spec.deployment.limits["memory"], "192Mi");
    assert_eq!(spec.deployment.secrets, ["s1", "s2"]);
    assert_eq!(
        spec.deployment.environment,
        BTreeMap::from([("REDIS_URL".to_string(), "redis://a".to_string())])
    );
    assert_eq!(spec.callee_environment[0].key, "REDIS_URL");
    let notes = merge_into(
        &mut StackSpec::new(vec!["a".into(), "b".into()], "i:1"),
        &[e("a", "lots", "s"), e("b", "1Gi", "s")],
    );
    assert!(notes[0].contains("limits.memory"), "{notes:?}");
}
