"""How the functions reach MongoDB Atlas: ``-c atlas_network=privatelink|nat|public``.

- ``privatelink`` (the default; it needs ``-c atlas_endpoint_service=com.amazonaws.vpce.REGION.
  vpce-svc-ID``, which Atlas shows when you add an AWS private endpoint): a VPC with private
  subnets in two AZs, an interface endpoint to Atlas's endpoint service, and every function in
  those subnets. Atlas's side of the endpoint listens on one port per cluster node in
  1024-65535: the endpoint's security group lets in exactly that, from the functions' group only.
  Nothing reaches Atlas over the internet and its IP access list can stay empty.
  The functions also call Secrets Manager and KMS (the secret, the data keys) and, with a remote
  embedder (Voyage, OpenAI), the provider's API on the internet. With a local embedder (hashing,
  minilm) the subnets are isolated (no route out at all) and Secrets Manager, KMS and Lambda (the
  jobs' worker is invoked) get interface endpoints of their own; with a remote one they need a way out anyway, so a NAT gateway carries
  those calls (HTTPS only) and no AWS-service endpoints are made (they would cost more than they
  save the NAT: :func:`monthly_cost`).
- ``nat``: the functions in private subnets whose one way out is a NAT gateway with an Elastic
  IP; the stack outputs that address as the one /32 to put on Atlas's IP access list.
- ``public``: today's behaviour, functions outside any VPC, reaching Atlas over the internet from
  Lambda's changing addresses: the only access-list entry that works is 0.0.0.0/0, so the synth
  warns.

The Lambda service gives a VPC function its network interfaces (one per subnet and security
group, shared by every function with the same pair), so 46 functions need no more addresses than
one. Traffic to the VPC's DNS resolver (which answers Atlas's private-endpoint host names) is not
filtered by security groups.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Annotations, CfnOutput, Fn, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from .lambdas import LOG_RETENTION, Placement

# Embedders that run inside the function: nothing to call on the internet.
LOCAL_EMBEDDERS = ("hashing", "minilm")
# Atlas's private endpoints: a port per node (mongod or mongos) of every cluster behind it.
ATLAS_PRIVATE_PORTS = ec2.Port.tcp_range(1024, 65535)
# Atlas over the internet: 27017 for a replica set, 27016 for a sharded cluster's mongos, 27015 BI.
ATLAS_PUBLIC_PORTS = ec2.Port.tcp_range(27015, 27017)
AZS = 2
CIDR = "10.64.0.0/16"
# The AWS APIs the functions call: Secrets Manager (functions/secrets.py), KMS (capsule.crypto) and
# Lambda (the accepting routes invoke the asynchronous jobs' worker: functions/async_jobs.py).
# Logs and metrics (Powertools' EMF lines) leave through the Lambda service, not the VPC, and
# MONGODB-AWS sign-in needs none: the function signs an STS request that Atlas sends on.
AWS_SERVICES = {
    "SecretsManager": ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
    "Kms": ec2.InterfaceVpcEndpointAwsService.KMS,
    "Lambda": ec2.InterfaceVpcEndpointAwsService.LAMBDA_,
}
# USD a month (730 h) in us-east-1, before traffic (endpoints $0.01/GB, NAT $0.045/GB); Atlas bills its
# own side of a private endpoint separately.
ENDPOINT_AZ_MONTH = 7.30  # an interface endpoint, per AZ
NAT_MONTH = 32.85  # a NAT gateway
ELASTIC_IP_MONTH = 3.65  # a public IPv4 address in use


@dataclass(frozen=True)
class NetworkChoice:
    mode: str  # privatelink, nat or public (infra/context.py)
    endpoint_service: str | None = None  # Atlas's endpoint service, with privatelink
    embedder: str = "voyage"

    @property
    def needs_internet(self) -> bool:
        """A NAT gateway: for Atlas itself (nat) or for the embedding provider's API."""
        return self.mode == "nat" or (self.mode == "privatelink" and self.embedder not in LOCAL_EMBEDDERS)


def monthly_cost(choice: NetworkChoice) -> float:
    """What the network costs a month before traffic (USD, us-east-1)."""
    if choice.mode == "public":
        return 0.0
    endpoints = 0 if choice.mode == "nat" else 1 + (0 if choice.needs_internet else len(AWS_SERVICES))
    nat = NAT_MONTH + ELASTIC_IP_MONTH if choice.needs_internet else 0.0
    return round(endpoints * AZS * ENDPOINT_AZ_MONTH + nat, 2)


class AtlasNetwork(Construct):
    """The VPC, endpoints and security groups of ``choice``; ``placement`` is where the functions
    go (None with ``public``)."""

    def __init__(self, scope: Construct, id: str, *, choice: NetworkChoice) -> None:
        super().__init__(scope, id)
        self.choice = choice
        self.placement: Placement | None = None
        self.vpc: ec2.Vpc | None = None
        self.atlas_endpoint: ec2.InterfaceVpcEndpoint | None = None
        self.nat_address: ec2.CfnEIP | None = None
        if choice.mode == "public":
            Annotations.of(self).add_warning_v2(
                "capsule:atlas-network-public",
                "-c atlas_network=public: the functions reach Atlas from Lambda's changing addresses, so "
                "Atlas's IP access list must allow 0.0.0.0/0. Use -c atlas_network=privatelink (with "
                "-c atlas_endpoint_service=...) or -c atlas_network=nat instead.",
            )
            return
        self.vpc = self._vpc()
        self.functions_group = ec2.SecurityGroup(
            self,
            "Functions",
            vpc=self.vpc,
            allow_all_outbound=False,
            description="Capsule Memory functions: out to Atlas and the AWS APIs they call, nothing in",
        )
        if choice.mode == "privatelink":
            self._atlas_endpoint()
        else:
            self.functions_group.add_egress_rule(
                ec2.Peer.any_ipv4(), ATLAS_PUBLIC_PORTS, "Atlas through the NAT gateway's fixed address"
            )
        if choice.needs_internet:
            self.functions_group.add_egress_rule(
                ec2.Peer.any_ipv4(), ec2.Port.tcp(443), "HTTPS: the embedding provider and the AWS APIs"
            )
        else:
            self._aws_endpoints()
        self.placement = Placement(
            vpc=self.vpc,
            subnets=ec2.SubnetSelection(subnet_group_name="Functions"),
            security_group=self.functions_group,
        )
        Annotations.of(self).add_info(
            f"atlas_network={choice.mode}: about ${monthly_cost(choice):.2f} a month before traffic (us-east-1)"
        )

    def _vpc(self) -> ec2.Vpc:
        internet = self.choice.needs_internet
        subnets = [
            ec2.SubnetConfiguration(
                name="Functions",
                subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS if internet else ec2.SubnetType.PRIVATE_ISOLATED,
                cidr_mask=20,
            )
        ]
        provider = None
        if internet:
            # The address Atlas's access list names (nat); made here so the stack can output it.
            self.nat_address = ec2.CfnEIP(self, "NatAddress", domain="vpc")
            provider = ec2.NatProvider.gateway(eip_allocation_ids=[self.nat_address.attr_allocation_id])
            subnets.insert(0, ec2.SubnetConfiguration(name="Nat", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24))
        vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(CIDR),
            max_azs=AZS,
            # One NAT gateway: one address on Atlas's list and one gateway's cost; an AZ outage
            # there cuts the other AZ's way out too (its functions still reach Atlas by PrivateLink).
            nat_gateways=1 if internet else 0,
            nat_gateway_provider=provider,
            subnet_configuration=subnets,
        )
        flow_logs = logs.LogGroup(self, "FlowLogs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY)
        vpc.add_flow_log("FlowLog", destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))
        return vpc

    def _atlas_endpoint(self) -> None:
        assert self.vpc is not None and self.choice.endpoint_service is not None
        group = ec2.SecurityGroup(
            self,
            "AtlasEndpointGroup",
            vpc=self.vpc,
            allow_all_outbound=False,
            description="Atlas private endpoint: a port per cluster node, from Capsule Memory functions only",
        )
        group.add_ingress_rule(self.functions_group, ATLAS_PRIVATE_PORTS, "Capsule Memory's functions to Atlas")
        self.functions_group.add_egress_rule(group, ATLAS_PRIVATE_PORTS, "Atlas through its private endpoint")
        self.atlas_endpoint = ec2.InterfaceVpcEndpoint(
            self,
            "AtlasEndpoint",
            vpc=self.vpc,
            service=ec2.InterfaceVpcEndpointService(self.choice.endpoint_service, 27017),
            subnets=ec2.SubnetSelection(subnet_group_name="Functions"),
            security_groups=[group],
            open=False,
            # Atlas publishes the private endpoint's host names itself (the -pl- SRV record).
            private_dns_enabled=False,
            lookup_supported_azs=False,
        )

    def _aws_endpoints(self) -> None:
        assert self.vpc is not None
        group = ec2.SecurityGroup(
            self,
            "AwsEndpointsGroup",
            vpc=self.vpc,
            allow_all_outbound=False,
            description="Secrets Manager and KMS endpoints: HTTPS from Capsule Memory functions only",
        )
        group.add_ingress_rule(self.functions_group, ec2.Port.tcp(443), "Capsule Memory's functions to AWS APIs")
        self.functions_group.add_egress_rule(group, ec2.Port.tcp(443), "Secrets Manager and KMS, privately")
        for name, service in AWS_SERVICES.items():
            ec2.InterfaceVpcEndpoint(
                self,
                f"{name}Endpoint",
                vpc=self.vpc,
                service=service,
                subnets=ec2.SubnetSelection(subnet_group_name="Functions"),
                security_groups=[group],
                open=False,
                private_dns_enabled=True,  # the SDK's usual host names answer with the endpoint
            )

    def outputs(self, scope: Construct) -> None:
        """What the operator gives Atlas: the endpoint's id, or the NAT's address for the access list."""
        if self.atlas_endpoint is not None:
            CfnOutput(
                scope,
                "AtlasPrivateEndpointId",
                value=self.atlas_endpoint.vpc_endpoint_id,
                description="Give this interface endpoint id to Atlas (Network Access > Private Endpoint) to "
                "finish the connection, then use the cluster's private-endpoint connection string",
            )
        if self.choice.mode == "nat" and self.nat_address is not None:
            CfnOutput(
                scope,
                "AtlasAccessListEntry",
                value=Fn.join("", [self.nat_address.attr_public_ip, "/32"]),
                description="The functions' one egress address: add exactly this entry to Atlas's IP access list",
            )
