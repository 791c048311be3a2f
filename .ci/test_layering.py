#!/usr/bin/env python3
"""Tests of the layering gate itself (.ci/layering.py), on the small trees
under .ci/layering_fixtures/: each kind of hidden import must make the gate
fail, a clean tree and the trees of ignored code must pass.

Usage: python3 .ci/test_layering.py
"""

import importlib.util
import os
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True  # no __pycache__ left in .ci/

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "layering.py")
FIXTURES = os.path.join(HERE, "layering_fixtures")

spec = importlib.util.spec_from_file_location("layering", SCRIPT)
layering = importlib.util.module_from_spec(spec)
spec.loader.exec_module(layering)


def report(name):
    return layering.Report(os.path.join(FIXTURES, name))


def circle_sets(r):
    return [set(c) for c in r.file_circles]


class Fails(unittest.TestCase):
    """Each fixture hides an import in a different form; the gate sees it."""

    def assert_file_circle(self, name, files):
        r = report(name)
        self.assertTrue(r.failed(), name)
        self.assertIn(set(files), circle_sets(r), name)
        return r

    def test_use_child(self):
        self.assert_file_circle("use_child_circle", ["src/a/mod.rs", "src/a/helper.rs"])

    def test_bare_child_path(self):
        self.assert_file_circle("bare_child_circle", ["src/a/mod.rs", "src/a/helper.rs"])

    def test_pub_use_reexport(self):
        r = self.assert_file_circle("reexport_circle", ["src/a/inner.rs", "src/a/mod.rs", "src/b.rs"])
        # Through a re-export: the re-exporting module and the defining one.
        self.assertIn("src/a/mod.rs", r.edges["src/b.rs"])
        self.assertIn("src/a/inner.rs", r.edges["src/b.rs"])
        self.assertEqual([["a", "b"]], r.module_circles)

    def test_super_super(self):
        self.assert_file_circle("super_super_circle", ["src/c/mod.rs", "src/c/d/e.rs"])

    def test_crate_inline_path(self):
        r = self.assert_file_circle("crate_inline_circle", ["src/a.rs", "src/b.rs"])
        self.assertEqual([["a", "b"]], r.module_circles)

    def test_use_group_with_nested_braces_and_rename(self):
        r = self.assert_file_circle("use_group_circle", ["src/a.rs", "src/b/c.rs"])
        # `b::{self as bee}` then `bee::q::r()`: the alias is followed.
        self.assertIn("src/b/q.rs", r.edges["src/a.rs"])

    def test_glob(self):
        self.assert_file_circle("glob_circle", ["src/a.rs", "src/b.rs"])

    def test_attribute_paths(self):
        r = self.assert_file_circle("attribute_paths_circle", ["src/a.rs", "src/b/mod.rs"])
        edges = r.edges["src/a.rs"]
        self.assertEqual(2, edges["src/b/codec.rs"])  # #[serde(with = "...")]
        self.assertEqual(4, edges["src/b/mod.rs"])  # #[arg(default_value_t = ...)]
        self.assertNotIn("src/b/unused.rs", edges)  # rename = "..." is no path

    def test_upward_floor_use(self):
        r = report("floor_upward")
        self.assertTrue(r.failed())
        self.assertEqual([], r.file_circles)
        self.assertEqual(["src/low.rs:1: uses high (floor top above floor bottom)"], r.floor_violations())

    def test_module_missing_from_floors(self):
        r = report("floor_missing")
        self.assertTrue(r.failed())
        self.assertEqual(["module b is on no floor of docs/architecture.md"], r.floor_violations())

    def test_cross_crate_by_crate_name(self):
        r = report("crate_direct_upward")
        self.assertTrue(r.failed())
        self.assertIn("crates/x/src/lib.rs", r.edges["src/store.rs"])
        self.assertEqual(["src/store.rs:2: uses pillbox_x (floor top above floor bottom)"], r.floor_violations())

    def test_cross_crate_through_alias(self):
        r = report("crate_alias_upward")
        self.assertTrue(r.failed())
        # crate::x:: goes into the crate; the crate's own crate:: stays in it.
        self.assertIn("crates/x/src/tools.rs", r.edges["src/store.rs"])
        self.assertIn("crates/x/src/tools.rs", r.edges["crates/x/src/lib.rs"])
        self.assertEqual(["src/store.rs:2: uses x (floor top above floor bottom)"], r.floor_violations())


class Passes(unittest.TestCase):
    def assert_clean(self, r):
        self.assertEqual([], r.file_circles)
        self.assertEqual([], r.module_circles)
        self.assertEqual([], r.floor_violations())
        self.assertFalse(r.failed())

    def test_clean_tree(self):
        r = report("clean")
        self.assert_clean(r)
        # main.rs reaches the library by its crate name; the inline module's
        # super::super and the imported module name are resolved.
        self.assertIn("src/app.rs", r.edges["src/main.rs"])
        self.assertIn("src/base/util.rs", r.edges["src/app.rs"])
        self.assertIn("src/base/inner.rs", r.edges["src/app.rs"])

    def test_comments_and_strings_are_ignored(self):
        r = report("ignored_comments_strings")
        self.assert_clean(r)
        self.assertEqual({}, r.edges["src/b.rs"])
        self.assertIn("src/b.rs", r.edges["src/a.rs"])

    def test_cfg_test_items_are_ignored(self):
        r = report("ignored_cfg_test")
        self.assert_clean(r)
        # The code after the test module is still read (brace matching, not
        # cutting the file at #[cfg(test)]); the test module's file is not.
        self.assertEqual({"src/c.rs": 26}, r.edges["src/b.rs"])
        self.assertNotIn("src/b/more_tests.rs", r.project.files)


class Lexer(unittest.TestCase):
    def tokens(self, text):
        return layering.FileParser(text).vals

    def test_literals_and_comments_leave_no_tokens(self):
        text = 'a /* x /* y */ z */ "s\\"t" r##"u"#v"## \'"\' \'\\\'\' b\'{\' // w\nc'
        self.assertEqual(["a", '"', '"', "'", "'", "'", "c"], self.tokens(text))

    def test_lifetimes_are_not_chars(self):
        self.assertEqual(["fn", "f", "<", "'", "a", ">", "(", ")", "{", "'", "}"], self.tokens("fn f<'a>() { 'x' }"))

    def test_lines_survive_multiline_literals(self):
        parser = layering.FileParser('"one\ntwo"\n/* three\n */ x')
        self.assertEqual(4, parser.line(parser.vals.index("x")))


class Cli(unittest.TestCase):
    def run_gate(self, name, *flags):
        return subprocess.run(
            [sys.executable, SCRIPT, "--root", os.path.join(FIXTURES, name), *flags],
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
        )

    def test_exit_status(self):
        self.assertEqual(0, self.run_gate("clean", "--quiet").returncode)
        self.assertEqual(1, self.run_gate("glob_circle", "--quiet").returncode)

    def test_quiet_lists_no_edges(self):
        quiet = self.run_gate("reexport_circle", "--quiet").stdout
        loud = self.run_gate("reexport_circle").stdout
        self.assertNotIn(" -> ", quiet)
        self.assertIn("src/b.rs:1 -> src/a/inner.rs", loud)
        self.assertIn("== summary: files 4; file circles 1 (largest 3 files); module circles 1 (largest 2 modules)", quiet)

    def test_upward_edges_section(self):
        out = self.run_gate("floor_upward").stdout
        self.assertIn("-- upward edges by module pair: 1", out)
        self.assertIn("low -> high: 1 file(s), floor bottom -> top; e.g. src/low.rs:1", out)


if __name__ == "__main__":
    unittest.main()
