//! Integration tests: the real `zot` binary against temporary ZOT_HOME and project folders.

mod support;

mod bad_input;
mod basics;
mod call;
mod completion;
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
mod new;
mod remove;
mod resources;
mod secrets;
mod shells;
mod special_files;
mod ssh_install;
mod submodules;
mod toggle;
mod update;
