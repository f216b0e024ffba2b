//! protocol tests.

use crate::util::*;
use serde_json::json;
