"""Issue 34: a network path to Atlas that works on day 0, and Atlas's AWS IAM authentication.

Each mode is synthesized once (cdk-nag's checks run on each): PrivateLink with a local embedder
(isolated subnets, AWS-service endpoints) and Atlas IAM authentication, PrivateLink with a remote
embedder (a NAT for the provider's API), NAT with a fixed address; public is the shared fixture.
"""

from __future__ import annotations

import pytest

from functions.routes import ROUTES
from infra import context
from infra.assets import build_layer_script
from infra.atlas_auth import GROUPS, groups_by_handler, route_group
from infra.atlas_network import NetworkChoice, monthly_cost
from infra.jobs import JOBS
from tests.infra.conftest import merged_template, stack_templates, stub_layer

SERVICE = "com.amazonaws.vpce.eu-west-1.vpce-svc-0123456789abcdef0"
MAX_RESOURCES = 250  # the margin this project keeps under CloudFormation's 500 per template


def _synth(tmp_path_factory, name: str, **more):
    import aws_cdk as cdk

    from infra.app import build_app

    tmp = tmp_path_factory.mktemp(name)
    app = cdk.App(
        outdir=str(tmp / "cdk.out"),
        context={"layer_zip": stub_layer(tmp / "layer.zip"), "build_dir": str(tmp / "build"), **more},
    )
    app, stack = build_app(app)
    assembly = app.synth()  # cdk-nag's AwsSolutions checks: a finding raises here
    return assembly, stack


@pytest.fixture(scope="module")
def isolated(tmp_path_factory):
    return _synth(
        tmp_path_factory,
        "isolated",
        atlas_network="privatelink",
        atlas_endpoint_service=SERVICE,
        embedder="hashing",
        atlas_iam_auth="true",
    )


@pytest.fixture(scope="module")
def privatelink(tmp_path_factory):
    return _synth(tmp_path_factory, "privatelink", atlas_endpoint_service=SERVICE)  # voyage, the default


@pytest.fixture(scope="module")
def nat(tmp_path_factory):
    return _synth(tmp_path_factory, "nat", atlas_network="nat")


def of(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def one(template: dict, kind: str) -> tuple[str, dict]:
    (found,) = of(template, kind).items()
    return found


def group_of(template: dict, text: str) -> str:
    (logical_id,) = [
        k
        for k, v in of(template, "AWS::EC2::SecurityGroup").items()
        if v["Properties"]["GroupDescription"].startswith(text)
    ]
    return logical_id


def rules(template: dict, kind: str, group: str) -> list[dict]:
    """The standalone ingress/egress rules of ``group`` (CDK writes SG-to-SG rules that way)."""
    key = "GroupId"
    return [
        v["Properties"]
        for v in of(template, f"AWS::EC2::SecurityGroup{kind}").values()
        if v["Properties"][key] == {"Fn::GetAtt": [group, "GroupId"]}
    ]


def inline_egress(template: dict, group: str) -> list[dict]:
    return template["Resources"][group]["Properties"].get("SecurityGroupEgress", [])


def assert_every_function_in_the_vpc(template: dict, functions_group: str) -> None:
    functions = of(template, "AWS::Lambda::Function")
    assert len(functions) == len(ROUTES) + len(JOBS) + 1  # and the asynchronous jobs' worker (infra/async_jobs.py)
    for logical_id, fn in functions.items():
        vpc = fn["Properties"].get("VpcConfig")
        assert vpc, logical_id
        assert vpc["SecurityGroupIds"] == [{"Fn::GetAtt": [functions_group, "GroupId"]}], logical_id
        assert len(vpc["SubnetIds"]) == 2, logical_id


def assert_resource_counts(assembly, stack) -> None:
    for name, template in stack_templates(assembly, stack).items():
        assert len(template["Resources"]) < MAX_RESOURCES, name


def outputs(assembly, stack) -> dict[str, dict]:
    return assembly.get_stack_by_name(stack.stack_name).template["Outputs"]


# ---- PrivateLink, isolated (a local embedder), with Atlas IAM authentication


def test_privatelink_with_a_local_embedder_has_isolated_subnets_in_two_azs_and_no_way_out(isolated):
    template = merged_template(*isolated)
    subnets = of(template, "AWS::EC2::Subnet")
    assert len(subnets) == 2
    assert len({str(s["Properties"]["AvailabilityZone"]) for s in subnets.values()}) == 2
    assert all(s["Properties"]["MapPublicIpOnLaunch"] is False for s in subnets.values())
    for kind in ("AWS::EC2::NatGateway", "AWS::EC2::InternetGateway", "AWS::EC2::EIP"):
        assert not of(template, kind), kind
    routes = of(template, "AWS::EC2::Route")
    assert not routes  # isolated: only the VPC's local route
    (flow_log,) = of(template, "AWS::EC2::FlowLog").values()
    assert flow_log["Properties"]["TrafficType"] == "ALL"


def test_privatelink_endpoints_atlas_and_the_aws_apis_the_functions_call(isolated):
    template = merged_template(*isolated)
    endpoints = {v["Properties"]["ServiceName"] if isinstance(v["Properties"]["ServiceName"], str)
                 else "aws:" + v["Properties"]["ServiceName"]["Fn::Join"][1][-1]: v["Properties"]
                 for v in of(template, "AWS::EC2::VPCEndpoint").values()}  # fmt: skip
    assert set(endpoints) == {SERVICE, "aws:.secretsmanager", "aws:.kms", "aws:.lambda"}
    atlas = endpoints[SERVICE]
    assert atlas["VpcEndpointType"] == "Interface" and atlas["PrivateDnsEnabled"] is False
    assert len(atlas["SubnetIds"]) == 2
    atlas_group = group_of(template, "Atlas private endpoint")
    assert atlas["SecurityGroupIds"] == [{"Fn::GetAtt": [atlas_group, "GroupId"]}]
    for name in ("aws:.secretsmanager", "aws:.kms", "aws:.lambda"):
        assert endpoints[name]["PrivateDnsEnabled"] is True, name


def test_privatelink_security_groups_let_only_the_functions_in(isolated):
    template = merged_template(*isolated)
    functions_group = group_of(template, "Capsule Memory functions")
    atlas_group = group_of(template, "Atlas private endpoint")
    aws_group = group_of(template, "Secrets Manager and KMS endpoints")
    source = {"Fn::GetAtt": [functions_group, "GroupId"]}
    (atlas_in,) = rules(template, "Ingress", atlas_group)
    assert (atlas_in["IpProtocol"], atlas_in["FromPort"], atlas_in["ToPort"]) == ("tcp", 1024, 65535)
    assert atlas_in["SourceSecurityGroupId"] == source
    (aws_in,) = rules(template, "Ingress", aws_group)
    assert (aws_in["FromPort"], aws_in["ToPort"], aws_in["SourceSecurityGroupId"]) == (443, 443, source)
    for group in (atlas_group, aws_group):  # nothing else comes in, and the endpoints start nothing
        assert "SecurityGroupIngress" not in template["Resources"][group]["Properties"]
        assert [e["CidrIp"] for e in inline_egress(template, group)] == ["255.255.255.255/32"]
    # The functions: out to the two endpoint groups only, nothing to the internet, nothing in.
    out = {(e["DestinationSecurityGroupId"]["Fn::GetAtt"][0], e["FromPort"], e["ToPort"])
           for e in rules(template, "Egress", functions_group)}  # fmt: skip
    assert out == {(atlas_group, 1024, 65535), (aws_group, 443, 443)}
    assert inline_egress(template, functions_group) == []
    assert "SecurityGroupIngress" not in template["Resources"][functions_group]["Properties"]


def test_privatelink_places_every_function_in_the_private_subnets(isolated):
    template = merged_template(*isolated)
    assert_every_function_in_the_vpc(template, group_of(template, "Capsule Memory functions"))
    assert_resource_counts(*isolated)


def test_the_stack_outputs_the_endpoint_id_for_atlas(isolated):
    found = outputs(*isolated)
    endpoint = found["AtlasPrivateEndpointId"]["Value"]["Ref"]
    template = isolated[0].get_stack_by_name(isolated[1].stack_name).template
    assert template["Resources"][endpoint]["Properties"]["ServiceName"] == SERVICE
    assert "AtlasAccessListEntry" not in found


def test_iam_auth_makes_three_roles_and_outputs_their_arns(isolated):
    assembly, stack = isolated
    template = merged_template(assembly, stack)
    found = outputs(assembly, stack)
    roles = {group: found[f"Atlas{group}RoleArn"]["Value"]["Fn::GetAtt"][0] for group in GROUPS}
    assert len(set(roles.values())) == 3
    for group, logical_id in roles.items():
        assert template["Resources"][logical_id]["Type"] == "AWS::IAM::Role"
        assert GROUPS[group] in found[f"Atlas{group}RoleArn"]["Description"]
    handlers = groups_by_handler()
    for fn in of(template, "AWS::Lambda::Function").values():
        props = fn["Properties"]
        assert props["Environment"]["Variables"]["CAPSULE_MONGODB_AUTH"] == "aws"
        handler = props["Handler"].rsplit(".", 1)
        group = handlers.get(":".join(handler))
        role = props["Role"]["Fn::GetAtt"][0]
        if group is None:  # the public document: a role of its own, no database user
            assert role not in roles.values()
        else:
            assert role == roles[group], props["Handler"]


def test_a_shared_role_writes_only_its_own_functions_log_groups(isolated):
    template = merged_template(*isolated)
    reader_role = outputs(*isolated)["AtlasReadersRoleArn"]["Value"]["Fn::GetAtt"][0]
    policies = [
        p["Properties"]
        for p in of(template, "AWS::IAM::Policy").values()
        if {"Ref": reader_role} in p["Properties"]["Roles"]
    ]
    log_groups = {
        s["Resource"]["Fn::GetAtt"][0]
        for p in policies
        for s in p["PolicyDocument"]["Statement"]
        if s["Action"] == ["logs:CreateLogStream", "logs:PutLogEvents"]
    }
    readers = [r for r in ROUTES if route_group(r) == "Readers"]
    assert len(log_groups) == len(readers)


def test_route_groups_follow_the_method():
    assert route_group(next(r for r in ROUTES if r.name == "list")) == "Readers"
    assert route_group(next(r for r in ROUTES if r.name == "store")) == "Writers"
    assert route_group(next(r for r in ROUTES if not r.auth)) is None
    assert {groups_by_handler()[job.handler] for job in JOBS} == {"Jobs"}


# ---- PrivateLink with a remote embedder: a NAT for the provider's API, no AWS-service endpoints


def test_privatelink_with_a_remote_embedder_goes_out_through_one_nat(privatelink):
    template = merged_template(*privatelink)
    assert len(of(template, "AWS::EC2::NatGateway")) == 1
    endpoints = [v["Properties"]["ServiceName"] for v in of(template, "AWS::EC2::VPCEndpoint").values()]
    assert endpoints == [SERVICE]
    functions_group = group_of(template, "Capsule Memory functions")
    https = [(e["CidrIp"], e["FromPort"]) for e in inline_egress(template, functions_group)]
    assert https == [("0.0.0.0/0", 443)]
    assert_every_function_in_the_vpc(template, functions_group)
    assert_resource_counts(*privatelink)
    assert "AtlasAccessListEntry" not in outputs(*privatelink)


# ---- NAT with a fixed address


def test_nat_has_one_gateway_with_the_elastic_ip_it_outputs(nat):
    assembly, stack = nat
    template = merged_template(assembly, stack)
    eip_id, eip = one(template, "AWS::EC2::EIP")
    _, gateway = one(template, "AWS::EC2::NatGateway")
    assert gateway["Properties"]["AllocationId"] == {"Fn::GetAtt": [eip_id, "AllocationId"]}
    assert not of(template, "AWS::EC2::VPCEndpoint")
    subnets = of(template, "AWS::EC2::Subnet").values()
    assert sorted(s["Properties"]["MapPublicIpOnLaunch"] for s in subnets) == [False, False, True, True]
    entry = outputs(assembly, stack)["AtlasAccessListEntry"]
    assert entry["Value"] == {"Fn::Join": ["", [{"Fn::GetAtt": [eip_id, "PublicIp"]}, "/32"]]}
    functions_group = group_of(template, "Capsule Memory functions")
    egress = {(e["CidrIp"], e["FromPort"], e["ToPort"]) for e in inline_egress(template, functions_group)}
    assert egress == {("0.0.0.0/0", 27015, 27017), ("0.0.0.0/0", 443, 443)}
    assert_every_function_in_the_vpc(template, functions_group)
    assert_resource_counts(assembly, stack)
    for fn in of(template, "AWS::Lambda::Function").values():  # a password sign-in unless asked otherwise
        assert "CAPSULE_MONGODB_AUTH" not in fn["Properties"]["Environment"]["Variables"]


# ---- public: as before, warned


def test_public_places_no_function_in_a_vpc_and_warns(synthesized, template):
    from aws_cdk import assertions

    assembly, stack = synthesized
    assert not of(template, "AWS::EC2::VPC")
    assert all("VpcConfig" not in fn["Properties"] for fn in of(template, "AWS::Lambda::Function").values())
    warnings = assertions.Annotations.from_stack(stack).find_warning(
        "*", assertions.Match.string_like_regexp("0.0.0.0/0")
    )
    assert warnings


# ---- context and costs


@pytest.mark.parametrize(
    "network, service, expected",
    [
        (None, None, ("public", None)),
        (None, SERVICE, ("privatelink", SERVICE)),
        ("nat", None, ("nat", None)),
        ("privatelink", SERVICE, ("privatelink", SERVICE)),
    ],
)
def test_the_network_context(network, service, expected):
    mode = context.atlas_network(network, service)
    assert (mode, context.atlas_endpoint_service(service, mode)) == expected


@pytest.mark.parametrize(
    "network, service, named",
    [
        ("vpn", None, "atlas_network"),
        ("privatelink", None, "Network Access > Private Endpoint"),
        ("privatelink", "vpce-svc-0123456789abcdef0", "atlas_endpoint_service"),
        ("nat", SERVICE, "atlas_endpoint_service"),
    ],
)
def test_a_bad_network_context_is_refused_by_name(network, service, named):
    with pytest.raises(SystemExit, match=named):
        context.atlas_endpoint_service(service, context.atlas_network(network, service))


def test_monthly_costs_before_traffic():
    assert monthly_cost(NetworkChoice("public")) == 0
    assert monthly_cost(NetworkChoice("privatelink", SERVICE, "hashing")) == 58.40  # 4 endpoints x 2 AZs
    assert monthly_cost(NetworkChoice("privatelink", SERVICE, "voyage")) == 51.10  # Atlas's + NAT + EIP
    assert monthly_cost(NetworkChoice("nat", None, "voyage")) == 36.50


def test_the_layer_carries_mongodb_aws_sign_in_without_the_sdk():
    build_layer = build_layer_script()
    names = {build_layer.requirement_name(r) for r in build_layer.requirements(build_layer.extras_for("voyage"))}
    assert "pymongo-auth-aws" in names  # its boto3 and botocore are the runtime's: pruned (PROVIDED)
    assert {"boto3", "botocore"} <= set(build_layer.PROVIDED)
