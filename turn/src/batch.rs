//! Batched socket calls: up to [`BATCH`] datagrams per `recvmmsg`, and the
//! datagrams bound for clients gathered and sent with one `sendmmsg` per
//! turn of the loop (nix's safe wrappers; Linux).
//!
//! A receive that returns fewer datagrams than it had room for has emptied
//! the socket's queue, so the loop goes back to waiting without the extra
//! call that would only say "would block".

use nix::sys::socket::{recvmmsg, sendmmsg, MsgFlags, MultiHeaders, SockaddrStorage};
use std::io::{self, IoSlice, IoSliceMut};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

/// Datagrams per receive call, and per send call.
pub const BATCH: usize = 32;
/// The largest datagram a receive slot holds (the largest UDP payload).
pub const SLOT: usize = 65_536;

/// Buffers and headers for one `recvmmsg` of up to [`BATCH`] datagrams.
pub struct Receive {
    buffers: Vec<u8>,
    headers: MultiHeaders<SockaddrStorage>,
    got: [(usize, Option<SocketAddr>); BATCH],
    count: usize,
}

impl Receive {
    /// Room for [`BATCH`] datagrams of up to [`SLOT`] bytes (virtual
    /// memory: a slot's pages become resident only as datagrams fill them).
    pub fn new() -> Receive {
        Receive {
            buffers: vec![0; BATCH * SLOT],
            headers: MultiHeaders::preallocate(BATCH, None),
            got: [(0, None); BATCH],
            count: 0,
        }
    }

    /// Receives what `socket` has queued, up to [`BATCH`] datagrams, and
    /// returns how many arrived; 0 when nothing was queued. A datagram
    /// cut short by its slot (over [`SLOT`] bytes, so never from UDP) or
    /// from a family the relay does not speak is skipped.
    pub fn recv(&mut self, socket: &impl AsRawFd) -> io::Result<usize> {
        let mut chunks = self.buffers.chunks_mut(SLOT);
        let mut slices: [[IoSliceMut<'_>; 1]; BATCH] = std::array::from_fn(|_| {
            [IoSliceMut::new(
                chunks.next().expect("BATCH slots of SLOT bytes"),
            )]
        });
        self.count = 0;
        let results = match recvmmsg(
            socket.as_raw_fd(),
            &mut self.headers,
            slices.iter_mut(),
            MsgFlags::MSG_DONTWAIT,
            None,
        ) {
            Ok(results) => results,
            Err(nix::errno::Errno::EAGAIN) => return Ok(0),
            Err(e) => return Err(e.into()),
        };
        let mut received = 0;
        for (slot, message) in results.enumerate() {
            received += 1;
            let truncated = message.flags.contains(MsgFlags::MSG_TRUNC);
            let from = message.address.and_then(socket_addr);
            self.got[slot] = (message.bytes, from.filter(|_| !truncated));
        }
        self.count = received;
        Ok(received)
    }

    /// The `i`th datagram of the last receive and its sender, if it is
    /// to be handled.
    pub fn get(&self, i: usize) -> Option<(&[u8], SocketAddr)> {
        if i >= self.count {
            return None;
        }
        let (len, from) = self.got[i];
        let start = i * SLOT;
        Some((&self.buffers[start..start + len], from?))
    }
}

fn socket_addr(storage: SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = storage.as_sockaddr_in() {
        return Some(SocketAddr::V4((*v4).into()));
    }
    storage
        .as_sockaddr_in6()
        .map(|v6| SocketAddr::V6((*v6).into()))
}

/// Datagrams gathered for one socket, sent together.
pub struct Send {
    bytes: Vec<u8>,
    /// Each datagram's end in `bytes`.
    ends: Vec<usize>,
    to: Vec<Option<SockaddrStorage>>,
    headers: MultiHeaders<SockaddrStorage>,
}

impl Send {
    /// An empty batch.
    pub fn new() -> Send {
        Send {
            bytes: Vec::with_capacity(BATCH * 2048),
            ends: Vec::with_capacity(BATCH),
            to: Vec::with_capacity(BATCH),
            headers: MultiHeaders::preallocate(BATCH, None),
        }
    }

    /// How many datagrams are gathered.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the batch is full (flush before adding).
    pub fn is_full(&self) -> bool {
        self.ends.len() == BATCH
    }

    /// The buffer to write the next datagram into, at its end.
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Ends the datagram written into [`buffer`](Self::buffer) since the
    /// last one, bound for `to`.
    pub fn push(&mut self, to: SocketAddr) {
        self.ends.push(self.bytes.len());
        self.to.push(Some(SockaddrStorage::from(to)));
    }

    /// Sends what was gathered on `socket` and empties the batch; returns
    /// how many datagrams the kernel took. A datagram it refuses is
    /// dropped, as a UDP relay drops what it cannot send.
    pub fn flush(&mut self, socket: &impl AsRawFd) -> usize {
        let mut sent_total = 0;
        let mut first = 0;
        while first < self.ends.len() {
            let mut start = if first == 0 { 0 } else { self.ends[first - 1] };
            let mut slices: [[IoSlice<'_>; 1]; BATCH] =
                std::array::from_fn(|_| [IoSlice::new(&[])]);
            let count = self.ends.len() - first;
            for (slice, &end) in slices.iter_mut().zip(&self.ends[first..]) {
                *slice = [IoSlice::new(&self.bytes[start..end])];
                start = end;
            }
            let sent = sendmmsg(
                socket.as_raw_fd(),
                &mut self.headers,
                slices[..count].iter(),
                &self.to[first..],
                [],
                MsgFlags::MSG_DONTWAIT,
            )
            .map(|results| results.count());
            match sent {
                Ok(n) if n > 0 => {
                    sent_total += n;
                    first += n;
                }
                // The first datagram was refused: drop it, go on.
                _ => first += 1,
            }
        }
        self.bytes.clear();
        self.ends.clear();
        self.to.clear();
        sent_total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn a_receive_takes_a_batch_and_says_when_the_queue_is_empty() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        for i in 0..(BATCH + 8) as u32 {
            sender
                .send_to(&i.to_be_bytes(), socket.local_addr().unwrap())
                .unwrap();
        }
        let mut rx = Receive::new();
        assert_eq!(rx.recv(&socket).unwrap(), BATCH);
        let (first, from) = rx.get(0).unwrap();
        assert_eq!(
            (first, from),
            (&0u32.to_be_bytes()[..], sender.local_addr().unwrap())
        );
        assert_eq!(
            rx.get(BATCH - 1).unwrap().0,
            (BATCH as u32 - 1).to_be_bytes()
        );
        assert_eq!(rx.recv(&socket).unwrap(), 8);
        assert!(rx.get(8).is_none());
        assert_eq!(
            rx.recv(&socket).unwrap(),
            0,
            "an empty queue is 0, not an error"
        );
    }

    #[test]
    fn a_send_batch_reaches_every_destination_in_order() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        let from = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut out = Send::new();
        for (payload, to) in [(&b"one"[..], &a), (b"two", &b), (b"three", &a)] {
            out.buffer().extend_from_slice(payload);
            out.push(to.local_addr().unwrap());
        }
        assert_eq!(out.len(), 3);
        assert_eq!(out.flush(&from), 3);
        assert_eq!(out.len(), 0);
        let mut buf = [0u8; 16];
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"one");
        let n = a.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"three");
        let n = b.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"two");
    }
}
