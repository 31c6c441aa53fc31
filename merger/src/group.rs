//! (config file, coming)
