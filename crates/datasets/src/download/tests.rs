use super::*;

#[test]
fn mirror_parse() {
    assert_eq!(Mirror::parse("https://x.org/d/"), Mirror::Url("https://x.org/d/".into()));
    assert_eq!(Mirror::parse("file:///srv/d"), Mirror::Dir(PathBuf::from("/srv/d")));
    assert_eq!(Mirror::parse("../shared/datasets"), Mirror::Dir(PathBuf::from("../shared/datasets")));
    assert!(Mirror::parse("/a").describe().contains("directory"));
}

#[test]
fn mirror_discover() {
    let root = std::env::temp_dir().join(format!("structdr-discover-{}", std::process::id()));
    let deep = root.join("main/crates/x");
    std::fs::create_dir_all(&deep).unwrap();
    // Only a mirror inside `root` counts: one found above it (a `shared/` beside the temp
    // directory) is not this test's, and `root/../shared` starts with `root` lexically, so
    // compare canonical paths.
    let canonical_root = root.canonicalize().unwrap();
    let inside_root = |m: &Mirror| matches!(m, Mirror::Dir(p) if p.canonicalize().is_ok_and(|c| c.starts_with(&canonical_root)));
    assert_eq!(Mirror::discover(&deep).filter(inside_root), None);
    std::fs::create_dir_all(root.join("shared/datasets")).unwrap();
    std::fs::write(root.join("shared/datasets/MANIFEST.toml"), "").unwrap();
    match Mirror::discover(&deep) {
        Some(Mirror::Dir(p)) => assert_eq!(p.canonicalize().unwrap(), root.join("shared/datasets").canonicalize().unwrap()),
        other => panic!("not discovered: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn retryable_classes() {
    let h = |s| DownloadError::Http { url: "u".into(), status: s };
    assert!(h(500).retryable() && h(503).retryable() && h(429).retryable());
    assert!(!h(404).retryable() && !h(403).retryable());
    assert!(DownloadError::Truncated { url: "u".into(), expected: 2, got: 1 }.retryable());
}
