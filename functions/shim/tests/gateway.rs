//! Which destinations count as the gateway, and the per-connection memory of
//! where a redirected connection was going.

use std::net::{IpAddr, SocketAddr};

use fmerge_shim::gateway::{self, Gateway, State};

fn gw(host: &str, port: u16) -> Option<Gateway> {
    Some(Gateway {
        host: host.into(),
        port,
    })
}

#[test]
fn base_urls_parse_to_host_and_port() {
    let p = gateway::parse_base_url;
    assert_eq!(
        p("http://gateway.openfaas.svc.cluster.local.:8080"),
        gw("gateway.openfaas.svc.cluster.local", 8080)
    );
    assert_eq!(p("HTTP://Gateway/function/x"), gw("gateway", 80));
    assert_eq!(p("http://user:pw@10.0.0.1:31112?x"), gw("10.0.0.1", 31112));
    assert_eq!(p("http://[::1]:8080/"), gw("::1", 8080));
    assert_eq!(p("http://[::1]"), gw("::1", 80));
    for bad in [
        "https://gateway:8080",
        "gateway:8080",
        "http://:8080",
        "http://gw:99999",
        "http://gw:x",
    ] {
        assert_eq!(p(bad), None, "{bad}");
    }
}

#[test]
fn table_urls_and_variables_combine_without_duplicates() {
    let env = |v: &str| match v {
        "GATEWAY_URL" => Some("http://gateway:8080".to_string()),
        "OPENFAAS_URL" => Some("not a url".to_string()),
        _ => None,
    };
    let all = gateway::gateways_from(
        &["http://gateway:8080/", "http://127.0.0.1:31112"],
        &["GATEWAY_URL", "OPENFAAS_URL", "unset"],
        env,
    );
    assert_eq!(
        all,
        vec![
            gw("gateway", 8080).unwrap(),
            gw("127.0.0.1", 31112).unwrap()
        ]
    );
}

#[test]
fn names_ip_literals_and_resolved_addresses_are_gateways() {
    let state = State::new(vec![
        gw("gateway.openfaas", 8080).unwrap(),
        gw("10.1.2.3", 31112).unwrap(),
    ]);
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    assert!(state.is_gateway(addr("10.1.2.3:31112")));
    assert!(
        state.is_gateway(addr("[::ffff:10.1.2.3]:31112")),
        "v4-mapped is the same address"
    );
    assert!(!state.is_gateway(addr("10.1.2.3:80")));
    assert!(!state.is_gateway(addr("10.9.9.9:8080")));

    let named = state.gateway_named("GATEWAY.OpenFaaS.").unwrap().clone();
    assert!(state.gateway_named("gateway.openfaas..").is_none());
    state.remember(&named, "10.9.9.9".parse::<IpAddr>().unwrap());
    assert!(state.is_gateway(addr("10.9.9.9:8080")));
    assert!(!state.is_gateway(addr("10.9.9.9:31112")));

    state.set_origin(40000, addr("10.9.9.9:8080"));
    assert_eq!(state.take_origin(40000), Some(addr("10.9.9.9:8080")));
    assert_eq!(state.take_origin(40000), None);
    assert!(!State::new(vec![gw("gateway", 80).unwrap()]).is_gateway(addr("127.0.0.1:80")));
}

#[test]
fn the_bypass_is_per_thread_and_scoped() {
    assert!(!gateway::bypassed());
    gateway::with_bypass(|| {
        assert!(gateway::bypassed());
        std::thread::spawn(|| assert!(!gateway::bypassed()))
            .join()
            .unwrap();
    });
    assert!(!gateway::bypassed());
}
