//! `pillbox health`: asks a running server for its capability document and
//! exits 0 on a 200. The container image's health check runs it, since the
//! image has no shell, curl or wget.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use clap::Args;

use super::common::CliResult;
use crate::config::DEFAULT_LISTEN;

const TIMEOUT: Duration = Duration::from_secs(5);
const PATH: &str = "/api/v1/capabilities";

#[derive(Debug, Args)]
pub struct HealthArgs {
    /// The server's listen address, as given to `serve` (0.0.0.0 and :: are asked on loopback)
    #[arg(long, env = "PILLBOX_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: String,
}

pub fn run(args: HealthArgs) -> CliResult {
    let addr = loopback_for(&args.listen)?;
    let status = get_status(addr).map_err(|e| format!("no answer from {addr}{PATH}: {e}"))?;
    if status == 200 {
        Ok(())
    } else {
        Err(format!("{addr}{PATH} answered {status}"))
    }
}

/// The address to ask: the listen address itself, or loopback when the
/// server listens on every address.
fn loopback_for(listen: &str) -> CliResult<SocketAddr> {
    let mut addr = listen
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {listen}: {e}"))?
        .next()
        .ok_or_else(|| format!("{listen} names no address"))?;
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    Ok(addr)
}

fn get_status(addr: SocketAddr) -> std::io::Result<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    write!(
        stream,
        "GET {PATH} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP answer"))
}
