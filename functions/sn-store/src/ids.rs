//! The ids `unique-id` and `register-user` hand out: unique-id's shape
//! without DeathStarBench's clock, so that two runs on the same data give the
//! same ids: `MACHINE_ID << 40 | INCR <counter>`.

use crate::Conn;
use fmerge_runtime::Error;

/// Counters below 2^40 and machine ids below 2^13 keep every id under 2^53,
/// exact even for JavaScript clients.
const COUNTER_BITS: u32 = 40;
pub const MAX_MACHINE_ID: u64 = (1 << 13) - 1;

/// The next id from the Redis counter `counter`, for the machine id
/// `machine` (the function's `MACHINE_ID` setting, read in its own crate).
pub async fn next(conn: &mut Conn, counter: &str, machine: &str) -> Result<u64, Error> {
    let machine = machine_id(machine)?;
    let count: u64 = conn.query(redis::cmd("INCR").arg(counter)).await?;
    if count >= 1 << COUNTER_BITS {
        return Err(Error::new(format!("{counter} overflowed 40 bits")));
    }
    Ok((machine << COUNTER_BITS) | count)
}

/// `MACHINE_ID` as a number in `0..=MAX_MACHINE_ID`, or a 500 that says so.
pub fn machine_id(raw: &str) -> Result<u64, Error> {
    match raw.trim().parse::<u64>() {
        Ok(id) if id <= MAX_MACHINE_ID => Ok(id),
        _ => Err(Error::new(format!(
            "MACHINE_ID must be an integer in 0..={MAX_MACHINE_ID}, not {raw:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_ids_are_13_bits() {
        assert_eq!(machine_id(" 7 ").unwrap(), 7);
        assert_eq!(machine_id("8191").unwrap(), MAX_MACHINE_ID);
        for bad in ["8192", "-1", "x", ""] {
            let e = machine_id(bad).unwrap_err();
            assert!(e.message().contains("0..=8191"), "{}", e.message());
        }
    }
}
