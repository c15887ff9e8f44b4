//! Integration tests: the real `zot` binary against temporary ZOT_HOME and project folders.

mod support;

mod bad_input;
mod basics;
mod git_install;
mod install;
mod list;
mod logs;
mod remove;
mod toggle;
