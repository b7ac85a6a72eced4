"""CDK assertions on the synthesized stack: routes, auth, functions, jobs, IAM, secret, alarms."""

from __future__ import annotations

import json

from functions.routes import ROUTES
from infra.jobs import JOBS


def resources(template: dict, kind: str) -> dict[str, dict]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def functions_by_handler(template: dict) -> dict[str, tuple[str, dict]]:
    return {
        v["Properties"]["Handler"]: (k, v["Properties"])
        for k, v in resources(template, "AWS::Lambda::Function").items()
    }


def lambda_handler(handler: str) -> str:
    module, function = handler.split(":")
    return f"{module}.{function}"


def integration_target(template: dict, route: dict) -> str:
    """The logical id of the function behind a route."""
    integration_id = route["Properties"]["Target"]["Fn::Join"][1][1]["Ref"]
    uri = template["Resources"][integration_id]["Properties"]["IntegrationUri"]
    return uri["Fn::GetAtt"][0]


def test_every_route_has_its_function_and_route(template):
    by_handler = functions_by_handler(template)
    routes = {r["Properties"]["RouteKey"]: r for r in resources(template, "AWS::ApiGatewayV2::Route").values()}
    assert set(routes) == {f"{r.method} {r.path}" for r in ROUTES}
    for route in ROUTES:
        logical_id, props = by_handler[lambda_handler(route.handler)]
        assert integration_target(template, routes[f"{route.method} {route.path}"]) == logical_id
        assert props["Runtime"] == "python3.12" and props["Architectures"] == ["arm64"]
        assert props["MemorySize"] == route.memory_mb and props["Timeout"] == route.timeout_s
        assert len(props["Layers"]) == 1


def test_every_v1_route_requires_iam_and_only_the_public_document_does_not(template):
    for route in resources(template, "AWS::ApiGatewayV2::Route").values():
        key = route["Properties"]["RouteKey"]
        expected = "AWS_IAM" if key.split(" ")[1].startswith("/v1/") else "NONE"
        assert route["Properties"]["AuthorizationType"] == expected, key
    assert {r.path for r in ROUTES if not r.auth} == {"/openapi.json"}


def test_every_function_logs_to_its_own_group_with_a_retention(template):
    groups = resources(template, "AWS::Logs::LogGroup")
    for _, props in functions_by_handler(template).values():
        group_id = props["LoggingConfig"]["LogGroup"]["Ref"]
        assert groups[group_id]["Properties"]["RetentionInDays"] == 30
    stage = next(iter(resources(template, "AWS::ApiGatewayV2::Stage").values()))["Properties"]
    assert stage["StageName"] == "$default" and "DestinationArn" in stage["AccessLogSettings"]


def test_jobs_run_on_schedules_with_dead_letter_queues(template):
    by_handler = functions_by_handler(template)
    rules = list(resources(template, "AWS::Events::Rule").values())
    queues = resources(template, "AWS::SQS::Queue")
    expected = {
        "Retention": "rate(1 hour)",
        "Mining": "rate(1 day)",
        "Backfill": "rate(5 minutes)",
        "Redact": "rate(1 day)",
    }
    assert {job.name for job in JOBS} == set(expected)
    for job in JOBS:
        logical_id, props = by_handler[lambda_handler(job.handler)]
        assert "ReservedConcurrentExecutions" not in props  # the job's lease keeps runs apart
        queue_id = props["DeadLetterConfig"]["TargetArn"]["Fn::GetAtt"][0]
        assert queue_id in queues
        rule = next(r for r in rules if r["Properties"]["Targets"][0]["Arn"]["Fn::GetAtt"][0] == logical_id)
        assert rule["Properties"]["ScheduleExpression"] == expected[job.name]
        assert rule["Properties"]["Targets"][0]["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0] == queue_id
    handlers = {job.handler for job in JOBS}
    assert handlers == {
        "functions.jobs:retention_handler",
        "functions.jobs:mining_handler",
        "functions.jobs:backfill_handler",
        "functions.jobs:redact_handler",
    }


def _statements(template: dict):
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            yield logical_id, statement
    for logical_id, role in resources(template, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                yield logical_id, statement
    for kind in ("AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy"):
        for logical_id, policy in resources(template, kind).items():
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                yield logical_id, statement


def test_no_iam_statement_allows_a_wildcard_action_or_uses_managed_policies(template):
    seen = 0
    for logical_id, statement in _statements(template):
        if statement["Effect"] == "Deny":  # the TLS-only guards deny every action on purpose
            continue
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert not [a for a in actions if "*" in a], (logical_id, actions)
        seen += 1
    assert seen > len(ROUTES)
    for role in resources(template, "AWS::IAM::Role").values():
        assert "ManagedPolicyArns" not in role["Properties"]


def test_the_secret_is_granted_to_the_functions_that_need_it_and_never_in_plain_text(template):
    (secret_id,) = resources(template, "AWS::SecretsManager::Secret")
    policies = resources(template, "AWS::IAM::Policy")
    by_handler = functions_by_handler(template)

    def secret_actions(function_props) -> set[str]:
        role_id = function_props["Role"]["Fn::GetAtt"][0]
        found = set()
        for policy in policies.values():
            if {"Ref": role_id} in policy["Properties"]["Roles"]:
                for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                    if statement["Resource"] == {"Ref": secret_id}:
                        found |= set(statement["Action"])
        return found

    needs = [r.handler for r in ROUTES if r.auth] + [job.handler for job in JOBS]
    for handler in needs:
        _, props = by_handler[lambda_handler(handler)]
        assert "secretsmanager:GetSecretValue" in secret_actions(props), handler
        env = props["Environment"]["Variables"]
        assert env["CAPSULE_SECRET_ARN"] == {"Ref": secret_id}
        assert not {"CAPSULE_MONGODB_URI", "VOYAGE_API_KEY", "OPENAI_API_KEY"} & set(env)
    public = next(r for r in ROUTES if not r.auth)
    assert secret_actions(by_handler[lambda_handler(public.handler)][1]) == set()


def test_alarms_on_5xx_rate_throttles_duration_and_job_failures(template):
    alarms = list(resources(template, "AWS::CloudWatch::Alarm").values())
    metric_names = {
        m.get("MetricStat", {}).get("Metric", {}).get("MetricName")
        for a in alarms
        for m in a["Properties"].get("Metrics", [])
    }
    assert {"5xx", "Count"} <= metric_names
    by_metric: dict[str, int] = {}
    for alarm in alarms:
        name = alarm["Properties"].get("MetricName")
        if name:
            by_metric[name] = by_metric.get(name, 0) + 1
        assert alarm["Properties"]["AlarmActions"]
    functions = len(resources(template, "AWS::Lambda::Function"))
    # Throttles are summed over up to 10 functions an alarm: every function is in one of them.
    throttled = [
        m["MetricStat"]["Metric"]
        for a in alarms
        for m in a["Properties"].get("Metrics", [])
        if m.get("MetricStat", {}).get("Metric", {}).get("MetricName") == "Throttles"
    ]
    assert len(throttled) == functions
    assert len({str(m["Dimensions"]) for m in throttled}) == functions
    assert all(len(a["Properties"].get("Metrics", [])) <= 11 for a in alarms)  # 10 metrics and their sum
    assert by_metric["Duration"] == functions
    assert by_metric["Errors"] == len(JOBS)
    assert by_metric["ApproximateNumberOfMessagesVisible"] == len(JOBS)


def test_cdk_nag_findings_are_acknowledged_with_reasons(synthesized):
    import aws_cdk as cdk

    _, stack = synthesized
    acknowledged = []
    for construct in stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                acknowledged.append(entry.data)
    assert acknowledged, "no acknowledgment recorded"
    flat = str(acknowledged)
    for rule in ("AwsSolutions-SMG4", "AwsSolutions-L1", "AwsSolutions-APIG4", "AwsSolutions-SQS3"):
        assert rule in flat


def test_every_stack_stays_well_under_cloudformations_500_resources(templates):
    """About 9 resources a route: the routes are spread over nested stacks (infra/api.py), each
    under 250 with room for 10 more routes, and the main stack does not grow with the routes."""
    from infra.api import ROUTE_STACKS, route_stack_of

    counts = {name: len(t["Resources"]) for name, t in templates.items()}
    assert len(counts) == ROUTE_STACKS + 1
    assert all(count < 250 for count in counts.values()), counts
    per_share = [sum(route_stack_of(r.name) == n for r in ROUTES) for n in range(ROUTE_STACKS)]
    assert max(per_share) * 9 + 10 * 9 < 250, per_share
    main = next(iter(templates.values()))
    # the routes' are all nested; the scheduled jobs' and the asynchronous jobs' worker are here
    assert len(resources(main, "AWS::Lambda::Function")) == len(JOBS) + 1
    assert len(resources(main, "AWS::ApiGatewayV2::Route")) == 0
    print("resources per stack:", counts)


def test_a_routes_share_is_fixed_by_its_name_alone():
    from infra.api import ROUTE_STACKS, route_stack_of

    assert route_stack_of("search") == route_stack_of("search")
    assert {route_stack_of(r.name) for r in ROUTES} == set(range(ROUTE_STACKS))


def test_every_route_answers_within_the_gateways_30_seconds_cold_start_included(template):
    from functions.routes import COLD_START_MARGIN_S, GATEWAY_TIMEOUT_S, MAX_TIMEOUT_S

    assert MAX_TIMEOUT_S + COLD_START_MARGIN_S <= GATEWAY_TIMEOUT_S
    for route in ROUTES:
        assert route.timeout_s <= MAX_TIMEOUT_S, route.name
    by_handler = functions_by_handler(template)
    for route in ROUTES:
        assert by_handler[lambda_handler(route.handler)][1]["Timeout"] <= MAX_TIMEOUT_S
    for integration in resources(template, "AWS::ApiGatewayV2::Integration").values():
        assert integration["Properties"]["TimeoutInMillis"] == GATEWAY_TIMEOUT_S * 1000


def test_the_stack_outputs_the_api_arn_and_a_policy_callers_attach(template):
    outputs = template["Outputs"]
    arn = json.dumps(outputs["ApiArn"]["Value"])
    assert "execute-api" in arn and "ApiHttpApi" in arn
    policy = json.dumps(outputs["InvokePolicy"]["Value"])
    assert "execute-api:Invoke" in policy and "$default/*" in policy and "ApiHttpApi" in policy


def test_the_public_document_has_its_own_small_throttle(template):
    from infra.api import PUBLIC_BURST, PUBLIC_RATE

    (stage,) = resources(template, "AWS::ApiGatewayV2::Stage").values()
    settings = stage["Properties"]["RouteSettings"]
    assert settings == {
        f"{r.method} {r.path}": {"ThrottlingRateLimit": PUBLIC_RATE, "ThrottlingBurstLimit": PUBLIC_BURST}
        for r in ROUTES
        if not r.auth
    }
    assert PUBLIC_RATE < stage["Properties"]["DefaultRouteSettings"]["ThrottlingRateLimit"]
    # The stage names the route by key: it waits for the nested stack that creates the route.
    assert any("Routes" in d for d in stage.get("DependsOn", [])), stage.get("DependsOn")


def test_the_job_worker_runs_15_minutes_and_only_the_accepting_routes_may_invoke_it(template):
    """functions.async_jobs: ingest, import and mining hand a job to the worker function by name
    (CAPSULE_JOB_FUNCTION) with lambda:InvokeFunction on it; the worker reads the secret and the
    data key, as the routes it runs for do."""
    from functions.async_jobs import FUNCTION_VARIABLE, WORKER_TIMEOUT_S
    from functions.async_jobs import ROUTES as ACCEPTING

    by_handler = functions_by_handler(template)
    worker_id, worker = by_handler["functions.job_worker.handler"]
    assert worker["Timeout"] == WORKER_TIMEOUT_S == 900
    assert FUNCTION_VARIABLE not in worker["Environment"]["Variables"]
    worker_role = worker["Role"]["Fn::GetAtt"][0]

    def role_actions(role_id: str) -> list[tuple[str, object]]:
        found = []
        for logical_id, statement in _statements(template):
            policy = template["Resources"][logical_id]["Properties"]
            if {"Ref": role_id} in policy.get("Roles", []):
                actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                found += [(a, statement["Resource"]) for a in actions]
        return found

    invokers = []
    for route in ROUTES:
        _, props = by_handler[lambda_handler(route.handler)]
        invokes = [r for a, r in role_actions(props["Role"]["Fn::GetAtt"][0]) if a == "lambda:InvokeFunction"]
        env = props["Environment"]["Variables"]
        if route.name in ACCEPTING or route.name == "job_get":  # job_get: a job whose worker died
            assert env[FUNCTION_VARIABLE] == {"Ref": worker_id}, route.name
            assert {"Fn::GetAtt": [worker_id, "Arn"]} in [
                r for resource in invokes for r in (resource if isinstance(resource, list) else [resource])
            ], route.name
            invokers.append(route.name)
        else:
            assert FUNCTION_VARIABLE not in env and not invokes, route.name
    assert sorted(invokers) == sorted([*ACCEPTING, "job_get"])
    granted = {a for a, _ in role_actions(worker_role)}
    assert {"secretsmanager:GetSecretValue", "kms:Decrypt", "kms:GenerateDataKey"} <= granted
