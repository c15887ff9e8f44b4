//! Integration tests: the real `zot` binary against temporary ZOT_HOME and project folders.

mod support;

mod bad_input;
mod basics;
mod call;
mod completion;
mod doctor;
mod generated;
mod git_install;
mod info;
mod install;
mod link;
mod list;
mod logs;
mod new;
mod remove;
mod shells;
mod special_files;
mod ssh_install;
mod toggle;
mod update;
