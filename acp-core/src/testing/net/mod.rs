//! The scripted client over the network (features `testing` and `http`), driving an agent
//! served with [`Server::serve_http`](crate::Server::serve_http) on both transports of ACP's
//! transport RFD: WebSocket ([`TestClientBuilder::websocket`](super::TestClientBuilder::websocket),
//! `ws.rs`) and Streamable HTTP ([`TestClientBuilder::http`](super::TestClientBuilder::http),
//! `http.rs`). Each bridges its transport to the same line-based wire the in-process and
//! child-process clients use ([`TestClientBuilder::attach`](super::TestClientBuilder::attach)),
//! so every assertion of the scripted client holds over the network too.

mod http;
mod ws;
