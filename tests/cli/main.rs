//! Integration tests: the real `zot` binary against temporary ZOT_HOME and project folders.

mod support;

mod agent;
mod bad_input;
mod basics;
mod build_hints;
mod call;
mod carry_over;
mod completion;
mod discovery;
mod doctor;
mod generated;
mod git_install;
mod hostile;
mod info;
mod install;
mod link;
mod links;
mod list;
mod logs;
mod manifest_decoding;
mod new;
mod remove;
mod resources;
mod secrets;
mod shells;
mod special_files;
mod ssh_install;
mod store_safety;
mod submodules;
mod toggle;
mod torture_crash;
mod torture_races;
mod update;
mod update_messages;
