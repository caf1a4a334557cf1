//! The Service network a control plane allocates from and advertises itself on:
//! kube-apiserver's `--service-cluster-ip-range`, `--service-node-port-range`,
//! `--advertise-address` and `--enable-aggregator-routing`, parsed once at start and handed to
//! the bundles that serve Services ([`super::GenericServer::service_network`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::RangeInclusive;
use std::sync::{Arc, OnceLock};

/// kube-apiserver's default `--service-cluster-ip-range` (`kubeoptions.DefaultServiceIPCIDR`).
pub const DEFAULT_SERVICE_CLUSTER_IP_RANGE: &str = "10.0.0.0/24";
/// kube-apiserver's default `--service-node-port-range`.
pub const DEFAULT_SERVICE_NODE_PORT_RANGE: &str = "30000-32767";

/// A problem with the Service network flags.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceNetworkError {
    /// `--service-cluster-ip-range` is not a CIDR.
    #[error("--service-cluster-ip-range: {0:?} is not a valid CIDR")]
    ClusterIpRange(String),
    /// `--service-cluster-ip-range` leaves fewer than two usable addresses (kube-apiserver
    /// needs one for the `kubernetes` Service and one more).
    #[error("--service-cluster-ip-range: {0} is too small; it must hold at least 4 addresses")]
    ClusterIpRangeTooSmall(String),
    /// `--service-node-port-range` is not `low-high` (or `low+size`).
    #[error("--service-node-port-range: {0:?} is not a valid port range such as 30000-32767")]
    NodePortRange(String),
}

/// An IP network: an address and a prefix length, the address's host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    /// The network address.
    pub network: IpAddr,
    /// The prefix length.
    pub prefix: u8,
}

impl IpNet {
    /// Parses `a.b.c.d/n` or `x::y/n`, as Go's `net.ParseCIDR` (the host bits are cleared).
    pub fn parse(text: &str) -> Option<IpNet> {
        let (ip, prefix) = text.split_once('/')?;
        let ip: IpAddr = ip.parse().ok()?;
        let prefix: u8 = prefix.parse().ok()?;
        if prefix > Self::bits_of(ip) {
            return None;
        }
        let mut net = IpNet {
            network: ip,
            prefix,
        };
        net.network = net.at(0);
        Some(net)
    }

    fn bits_of(ip: IpAddr) -> u8 {
        if ip.is_ipv4() { 32 } else { 128 }
    }

    /// The number of addresses in the network (saturating at `u128::MAX`).
    pub fn size(&self) -> u128 {
        let host_bits = u32::from(Self::bits_of(self.network) - self.prefix);
        1u128.checked_shl(host_bits).unwrap_or(u128::MAX)
    }

    /// The address at `offset` from the network address (wrapping inside the network).
    pub fn at(&self, offset: u128) -> IpAddr {
        let host_bits = u32::from(Self::bits_of(self.network) - self.prefix);
        let mask = 1u128.checked_shl(host_bits).map_or(u128::MAX, |m| m - 1);
        match self.network {
            IpAddr::V4(v4) => {
                let base = u128::from(u32::from(v4)) & !mask & u128::from(u32::MAX);
                IpAddr::V4(Ipv4Addr::from((base | (offset & mask)) as u32))
            }
            IpAddr::V6(v6) => {
                let base = u128::from(v6) & !mask;
                IpAddr::V6(Ipv6Addr::from(base | (offset & mask)))
            }
        }
    }

    /// The offset of `ip` from the network address, when the network holds it.
    pub fn offset_of(&self, ip: IpAddr) -> Option<u128> {
        let host_bits = u32::from(Self::bits_of(self.network) - self.prefix);
        let mask = 1u128.checked_shl(host_bits).map_or(u128::MAX, |m| m - 1);
        let (value, base) = match (ip.to_canonical(), self.network) {
            (IpAddr::V4(ip), IpAddr::V4(net)) => {
                (u128::from(u32::from(ip)), u128::from(u32::from(net)))
            }
            (IpAddr::V6(ip), IpAddr::V6(net)) => (u128::from(ip), u128::from(net)),
            _ => return None,
        };
        (value & !mask == base).then_some(value & mask)
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// The Service network of a control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceNetwork {
    /// `--service-cluster-ip-range`: where cluster IPs are allocated; its first usable address
    /// is the `kubernetes` Service's.
    pub cluster_ip_range: IpNet,
    /// `--service-node-port-range`: where node ports are allocated.
    pub node_port_range: RangeInclusive<u16>,
    /// `--advertise-address`: the address the `kubernetes` Service's endpoints point at;
    /// `None` is the bind address, or the host's first non-loopback address when the bind
    /// address is unspecified.
    pub advertise_address: Option<IpAddr>,
    /// `--enable-aggregator-routing`: resolve Services to their endpoints' addresses rather
    /// than their cluster IPs.
    pub enable_aggregator_routing: bool,
}

impl Default for ServiceNetwork {
    fn default() -> Self {
        Self::parse(
            DEFAULT_SERVICE_CLUSTER_IP_RANGE,
            DEFAULT_SERVICE_NODE_PORT_RANGE,
            None,
            false,
        )
        .expect("the defaults parse")
    }
}

impl ServiceNetwork {
    /// Parses the flags' values.
    pub fn parse(
        cluster_ip_range: &str,
        node_port_range: &str,
        advertise_address: Option<IpAddr>,
        enable_aggregator_routing: bool,
    ) -> Result<Self, ServiceNetworkError> {
        let range = IpNet::parse(cluster_ip_range.trim())
            .ok_or_else(|| ServiceNetworkError::ClusterIpRange(cluster_ip_range.to_string()))?;
        if range.size() < 4 {
            return Err(ServiceNetworkError::ClusterIpRangeTooSmall(
                range.to_string(),
            ));
        }
        let ports = parse_port_range(node_port_range)
            .ok_or_else(|| ServiceNetworkError::NodePortRange(node_port_range.to_string()))?;
        Ok(Self {
            cluster_ip_range: range,
            node_port_range: ports,
            advertise_address,
            enable_aggregator_routing,
        })
    }

    /// The `kubernetes` Service's cluster IP: the first address of the range after the
    /// network address (kube-apiserver's `ServiceIPRange` first IP).
    pub fn kubernetes_service_ip(&self) -> IpAddr {
        self.cluster_ip_range.at(1)
    }

    /// The node port range as kube-apiserver prints it (`30000-32767`).
    pub fn node_port_range_text(&self) -> String {
        format!(
            "{}-{}",
            self.node_port_range.start(),
            self.node_port_range.end()
        )
    }
}

/// `utilnet.ParsePortRange`: `low-high`, `low+size` or a single port.
fn parse_port_range(text: &str) -> Option<RangeInclusive<u16>> {
    let text = text.trim();
    let (low, high) = if let Some((low, high)) = text.split_once('-') {
        (low.parse::<u16>().ok()?, high.parse::<u16>().ok()?)
    } else if let Some((low, size)) = text.split_once('+') {
        let low = low.parse::<u16>().ok()?;
        (low, low.checked_add(size.parse::<u16>().ok()?)?)
    } else {
        let port = text.parse::<u16>().ok()?;
        (port, port)
    };
    (low <= high).then_some(low..=high)
}

/// The address the server listens on, known once its listener is bound (with
/// `--secure-port=0` only then): post-start hooks read it.
#[derive(Debug, Clone, Default)]
pub struct ServingAddress(Arc<OnceLock<std::net::SocketAddr>>);

impl ServingAddress {
    /// The bound address, once the listener is bound.
    pub fn get(&self) -> Option<std::net::SocketAddr> {
        self.0.get().copied()
    }

    /// Records the bound address (the first record wins).
    pub fn set(&self, address: std::net::SocketAddr) {
        let _ = self.0.set(address);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_kube_apiserver_parses_them() {
        let net = ServiceNetwork::default();
        assert_eq!(net.cluster_ip_range.to_string(), "10.0.0.0/24");
        assert_eq!(net.kubernetes_service_ip().to_string(), "10.0.0.1");
        assert_eq!(net.node_port_range, 30000..=32767);
        let v6 = IpNet::parse("fd00:10:96::5/112").unwrap();
        assert_eq!(v6.to_string(), "fd00:10:96::/112");
        assert_eq!(v6.size(), 65536);
        assert_eq!(v6.offset_of("fd00:10:96::ff".parse().unwrap()), Some(255));
        assert_eq!(v6.offset_of("10.0.0.1".parse().unwrap()), None);
        let v4 = IpNet::parse("10.96.0.7/12").unwrap();
        assert_eq!(v4.to_string(), "10.96.0.0/12");
        assert_eq!(v4.at(v4.size() - 1).to_string(), "10.111.255.255");
        assert_eq!(v4.offset_of("10.112.0.0".parse().unwrap()), None);
        assert_eq!(parse_port_range("30000+10"), Some(30000..=30010));
        assert_eq!(
            ServiceNetwork::parse("10.0.0.0/31", "1-2", None, false),
            Err(ServiceNetworkError::ClusterIpRangeTooSmall(
                "10.0.0.0/31".into()
            ))
        );
        assert!(ServiceNetwork::parse("10.0.0.0", "1-2", None, false).is_err());
        assert!(ServiceNetwork::parse("10.0.0.0/24", "9-2", None, false).is_err());
    }
}
