//! Packaging files that are easy to let drift (issue 17 point 3). The
//! `.deb` itself is built and inspected by packaging/check-deb.sh from
//! `.ci/run` where cargo-deb is installed, and the image where a container
//! engine runs; these checks run everywhere.

use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The unit without its comment header.
fn unit_body(unit: &str) -> Vec<&str> {
    unit.lines().skip_while(|l| l.starts_with('#')).collect()
}

#[test]
fn the_deb_unit_is_the_hardened_unit_with_debian_paths() {
    let manual = read("packaging/pillbox.service");
    let deb = read("packaging/debian/pillbox.service");
    let manual = unit_body(&manual);
    let deb = unit_body(&deb);
    assert_eq!(manual.len(), deb.len());
    let differ: Vec<(&str, &str)> = manual
        .iter()
        .zip(&deb)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (*a, *b))
        .collect();
    assert_eq!(
        differ,
        [
            (
                "EnvironmentFile=-/etc/pillbox/pillbox.env",
                "EnvironmentFile=-/etc/default/pillbox"
            ),
            (
                "ExecStart=/usr/local/bin/pillbox serve",
                "ExecStart=/usr/bin/pillbox serve"
            ),
        ]
    );
    assert!(deb.contains(&"User=pillbox") && deb.contains(&"StateDirectory=pillbox"));
}

#[test]
fn the_deb_metadata_names_files_that_exist() {
    let manifest = read("Cargo.toml");
    let deb = &manifest[manifest
        .find("[package.metadata.deb]")
        .expect("cargo deb metadata")..];
    for source in [
        "packaging/pillbox.env.example",
        "README.md",
        "packaging/README.md",
    ] {
        assert!(
            deb.contains(&format!("[\"{source}\"")),
            "{source} is an asset"
        );
        assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(source).is_file());
    }
    assert!(deb.contains("[\"target/release/pillbox\", \"usr/bin/\", \"755\"]"));
    assert!(deb.contains("maintainer-scripts = \"packaging/debian/\""));
    let postinst = read("packaging/debian/postinst");
    assert!(postinst.contains("useradd --system") && postinst.contains("#DEBHELPER#"));
    assert!(postinst.contains("/var/lib/pillbox"));
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/debian/postinst"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o111, 0o111, "postinst is executable");
}

#[test]
fn the_container_build_gets_the_whole_source_but_no_build_output() {
    let containerfile = read("packaging/Containerfile");
    assert!(containerfile.contains("\nCOPY . .\n"), "the full source");
    assert!(containerfile.contains("HEALTHCHECK"));
    assert!(containerfile.contains("CMD [\"/pillbox\", \"health\"]"));
    assert!(containerfile.contains("USER 65532:65532"));
    assert!(containerfile.contains("VOLUME /data"));
    let ignore = read(".dockerignore");
    let ignored: Vec<&str> = ignore
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    for needed in ["target/", ".git/"] {
        assert!(
            ignored.contains(&needed),
            "{needed} stays out of the context"
        );
    }
    // Everything Cargo.toml names must reach the build.
    let manifest = read("Cargo.toml");
    for path in ["benches/", "src/", "assets/", "schema.sql", "Cargo.lock"] {
        assert!(
            !ignored
                .iter()
                .any(|i| path.starts_with(i.trim_end_matches('/'))),
            "{path} is in the context"
        );
    }
    assert!(
        manifest.contains("name = \"load\"")
            && Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("benches/load.rs")
                .is_file()
    );
    let compose = read("packaging/compose.yaml");
    assert!(
        compose.contains("context: ..") && compose.contains("dockerfile: packaging/Containerfile")
    );
    assert!(compose.contains("pillbox-data:/data"));
}
