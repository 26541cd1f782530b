"""batch/v1 Jobs through the HTTP API: discovery, defaults, the generated selector, validation, status rules.

Upstream (release 1.32): k/k ``pkg/apis/batch/v1/defaults.go`` ``SetDefaults_Job``;
``pkg/registry/batch/job/strategy.go`` (``PrepareForCreate``/``generateSelector``, ``PrepareForUpdate``'s
generation, the status strategy's options with JobManagedBy on); ``pkg/apis/batch/validation/validation.go``
(``ValidateJob``, ``validateGeneratedSelector``, ``validateJobSpec``, ``ValidateJobSpecUpdate``,
``validateCompletions``, ``ValidateJobStatusUpdate``); ``pkg/printers/internalversion/printers.go`` ``printJob``.
"""

from __future__ import annotations

import random
from typing import Any

import httpx

JOBS = "/apis/batch/v1/namespaces/default/jobs"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def job(name: str = "pi", *, restart: str | None = "Never", labels: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "pi", "image": "busybox"}]}
    if restart is not None:
        pod_spec["restartPolicy"] = restart
    template: dict[str, Any] = {"spec": pod_spec}
    if labels is not None:
        template["metadata"] = {"labels": labels}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": template, **spec}}


def causes(r: httpx.Response) -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"], status["details"]["group"]) == ("Invalid", "Job", "batch")
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(JOBS, json=body)
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


async def test_batch_group_is_discovered_with_jobs_in_category_all(client: httpx.AsyncClient) -> None:
    groups = (await client.get("/apis")).json()
    batch = next(g for g in groups["groups"] if g["name"] == "batch")
    assert batch["preferredVersion"]["groupVersion"] == "batch/v1"
    resources = (await client.get("/apis/batch/v1")).json()["resources"]
    by_name = {r["name"]: r for r in resources}
    assert by_name["jobs"]["kind"] == "Job" and by_name["jobs"]["namespaced"] is True
    assert by_name["jobs"]["categories"] == ["all"]
    assert "jobs/status" in by_name


async def test_create_defaults_the_spec_and_generates_the_selector(client: httpx.AsyncClient) -> None:
    body = await created(client, job())
    uid = body["metadata"]["uid"]
    spec = body["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["manualSelector"]) == ("NonIndexed", False, False)
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    generated = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
                 "controller-uid": uid, "job-name": "pi"}
    assert spec["template"]["metadata"]["labels"] == generated
    # A Job without labels shows its template's (SetDefaults_Job on the read back from storage).
    assert body["metadata"]["labels"] == generated
    assert body["metadata"]["generation"] == 1
    assert body["status"] == {}
    got = (await client.get(f"{JOBS}/pi")).json()
    assert got["spec"] == spec


async def test_parallelism_alone_leaves_completions_unset_and_user_labels_stay(client: httpx.AsyncClient) -> None:
    body = await created(client, job("queue", parallelism=3, labels={"app": "q"}))
    assert "completions" not in body["spec"] and body["spec"]["parallelism"] == 3
    assert body["metadata"]["labels"] == {"app": "q"}
    assert body["spec"]["template"]["metadata"]["labels"]["app"] == "q"


async def test_restart_policy_must_be_on_failure_or_never(client: httpx.AsyncClient) -> None:
    r = await client.post(JOBS, json=job(restart=None))
    assert causes(r) == [("FieldValueRequired", "spec.template.spec.restartPolicy",
                          'Required value: valid values: "OnFailure", "Never"')]
    assert r.json()["message"] == ('Job.batch "pi" is invalid: spec.template.spec.restartPolicy: '
                                   'Required value: valid values: "OnFailure", "Never"')
    assert (await client.get(f"{JOBS}/pi")).status_code == 404


async def test_spec_counts_and_modes_are_checked(client: httpx.AsyncClient) -> None:
    r = await client.post(JOBS, json=job(parallelism=-1, backoffLimit=-2, completionMode="Sometimes",
                                         podReplacementPolicy="Never"))
    assert causes(r) == [
        ("FieldValueInvalid", "spec.parallelism", "Invalid value: -1: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.backoffLimit", "Invalid value: -2: must be greater than or equal to 0"),
        ("FieldValueNotSupported", "spec.completionMode",
         'Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"'),
        ("FieldValueNotSupported", "spec.podReplacementPolicy",
         'Unsupported value: "Never": supported values: "Failed", "TerminatingOrFailed"'),
    ]


async def test_a_wrong_generated_label_is_refused(client: httpx.AsyncClient) -> None:
    r = await client.post(JOBS, json=job(labels={"job-name": "other"}))
    found = causes(r)
    assert found[0][:2] == ("FieldValueInvalid", "spec.template.metadata.labels[job-name]")
    assert found[0][2].endswith(": must be 'pi'")


async def test_manual_selector_must_match_the_template(client: httpx.AsyncClient) -> None:
    r = await client.post(JOBS, json=job(manualSelector=True, selector={"matchLabels": {"app": "x"}}, labels={"app": "y"}))
    assert causes(r) == [("FieldValueInvalid", "spec.template.metadata.labels",
                          'Invalid value: map[string]string{"app":"y"}: `selector` does not match template `labels`')]
    ok = await created(client, job(manualSelector=True, selector={"matchLabels": {"app": "x"}}, labels={"app": "x"}))
    assert ok["spec"]["selector"] == {"matchLabels": {"app": "x"}}
    assert ok["spec"]["template"]["metadata"]["labels"] == {"app": "x"}


async def test_spec_updates_bump_generation_and_immutable_fields_stay(client: httpx.AsyncClient) -> None:
    body = await created(client, job())
    body["spec"]["activeDeadlineSeconds"] = 30
    r = await client.put(f"{JOBS}/pi", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["generation"] == 2
    stored = r.json()
    stored["spec"]["completions"] = 5
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "alpine"
    refused = await client.put(f"{JOBS}/pi", json=stored)
    found = causes(refused)
    assert found[0] == ("FieldValueInvalid", "spec.completions", "Invalid value: 5: field is immutable")
    assert found[1][:2] == ("FieldValueInvalid", "spec.template") and found[1][2].endswith("field is immutable")
    assert (await client.get(f"{JOBS}/pi")).json()["spec"]["completions"] == 1


async def test_status_rules_refuse_decreasing_counters_and_a_bare_complete(client: httpx.AsyncClient) -> None:
    body = await created(client, job())
    body["status"] = {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z"}
    r = await client.put(f"{JOBS}/pi/status", json=body)
    assert r.status_code == 200, r.text
    lower = r.json()
    lower["status"]["succeeded"] = 0
    assert causes(await client.put(f"{JOBS}/pi/status", json=lower)) == [
        ("FieldValueInvalid", "status.succeeded", "Invalid value: 0: cannot decrease the succeeded counter")]
    bare = r.json()
    bare["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    bare["status"]["completionTime"] = "2026-01-01T00:00:05Z"
    assert causes(await client.put(f"{JOBS}/pi/status", json=bare)) == [
        ("FieldValueInvalid", "status.conditions",
         "Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition")]


async def test_table_shows_status_completions_and_duration(client: httpx.AsyncClient, clock: Any) -> None:
    body = await created(client, job(parallelism=2, completions=None))
    body["status"] = {"succeeded": 1, "startTime": body["metadata"]["creationTimestamp"]}
    assert (await client.put(f"{JOBS}/pi/status", json=body)).status_code == 200
    await clock.advance(75)
    table = (await client.get(JOBS, headers={"Accept": TABLE})).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"]
    assert table["rows"][0]["cells"][:5] == ["pi", "Running", "1/1 of 2", "75s", "75s"]


async def test_table_status_follows_the_conditions_as_print_job_does(client: httpx.AsyncClient) -> None:
    body = await created(client, job())
    start = body["metadata"]["creationTimestamp"]
    body["status"] = {"startTime": start, "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"}]}
    # Allowed on a NonIndexed Job (AllowForSuccessCriteriaMetInExtendedScope), but printJob has no
    # SuccessCriteriaMet state: such a Job still reads Running until it is Complete.
    r = await client.put(f"{JOBS}/pi/status", json=body)
    assert r.status_code == 200, r.text
    cells = (await client.get(JOBS, headers={"Accept": TABLE})).json()["rows"][0]["cells"]
    assert cells[1] == "Running"
    stored = r.json()
    stored["status"]["conditions"].append({"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded"})
    assert causes(await client.put(f"{JOBS}/pi/status", json=stored)) == [
        ("FieldValueInvalid", "status.conditions",
         "Invalid value: cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")]
    other = await created(client, job("other"))
    other["status"] = {"startTime": start, "conditions": [
        {"type": "FailureTarget", "status": "True", "reason": "DeadlineExceeded"}]}
    assert (await client.put(f"{JOBS}/other/status", json=other)).status_code == 200
    rows = {row["cells"][0]: row["cells"] for row in (await client.get(JOBS, headers={"Accept": TABLE})).json()["rows"]}
    assert rows["other"][1] == "FailureTarget"


async def test_a_generated_name_that_is_taken_is_not_replaced_for_a_job(client: httpx.AsyncClient, app: Any) -> None:
    # The selector's job-name labels carry the generated name, so upstream's answer (409, retry) stands
    # where other kinds would get a second name. The name the server will generate next is predicted
    # from its seeded generator, then taken by a Job created under that very name.
    clone = random.Random()
    clone.setstate(app.state.rng.getstate())
    clone.getrandbits(128)  # the uid of the Job that takes the name
    clone.getrandbits(128)  # the uid of the generated one
    taken = "pi-" + "".join(clone.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    await created(client, job(taken))
    body = job()
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "pi-"
    r = await client.post(JOBS, json=body)
    assert r.status_code == 409, r.text
    assert r.json()["message"] == (f'jobs.batch "{taken}" already exists, the server was not able to generate a '
                                   "unique name for the object")


async def test_openapi_describes_jobs_from_the_built_in_schemas(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi/v3")).json()["paths"]
    assert "apis/batch/v1" in paths
    doc = (await client.get("/" + paths["apis/batch/v1"]["serverRelativeURL"].lstrip("/"))).json()
    schema = doc["components"]["schemas"]["io.k8s.api.batch.v1.JobSpec"]
    assert "backoffLimit" in schema["properties"] and "podReplacementPolicy" in schema["properties"]
    assert "/apis/batch/v1/namespaces/{namespace}/jobs/{name}/status" in doc["paths"]


async def test_managed_by_must_be_a_domain_prefixed_path(client: httpx.AsyncClient) -> None:
    assert causes(await client.post(JOBS, json=job(managedBy="queue"))) == [
        ("FieldValueInvalid", "spec.managedBy",
         'Invalid value: "queue": must be a domain-prefixed path (such as "acme.io/foo")')]
    assert (await client.post(JOBS, json=job(managedBy="example.com/queue"))).status_code == 201


async def test_pod_failure_policy_rules_are_checked(client: httpx.AsyncClient) -> None:
    policy = {"rules": [
        {"action": "Restart", "onExitCodes": {"containerName": "other", "operator": "In", "values": [3, 0, 3]}},
        {"action": "", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]},
        {"action": "Ignore"},
    ]}
    r = await client.post(JOBS, json=job(podFailurePolicy=policy))
    assert causes(r) == [
        ("FieldValueNotSupported", "spec.podFailurePolicy.rules[0].action",
         'Unsupported value: "Restart": supported values: "Count", "FailIndex", "FailJob", "Ignore"'),
        ("FieldValueInvalid", "spec.podFailurePolicy.rules[0].onExitCodes.containerName",
         'Invalid value: "other": must be one of the container or initContainer names in the pod template'),
        ("FieldValueInvalid", "spec.podFailurePolicy.rules[0].onExitCodes.values[1]",
         "Invalid value: 0: must not be 0 for the In operator"),
        ("FieldValueDuplicate", "spec.podFailurePolicy.rules[0].onExitCodes.values[2]", "Duplicate value: 3"),
        ("FieldValueInvalid", "spec.podFailurePolicy.rules[0].onExitCodes.values",
         "Invalid value: []int32{3, 0, 3}: must be ordered"),
        ("FieldValueRequired", "spec.podFailurePolicy.rules[1].action",
         'Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'),
        ("FieldValueNotSupported", "spec.podFailurePolicy.rules[1].onPodConditions[0].status",
         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
        ("FieldValueInvalid", "spec.podFailurePolicy.rules[2]",
         "Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
    ]
    # A pod failure policy defaults podReplacementPolicy to Failed and needs restartPolicy Never.
    ok = await created(client, job(podFailurePolicy={"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}))
    assert ok["spec"]["podReplacementPolicy"] == "Failed"
    r = await client.post(JOBS, json=job("onfailure", restart="OnFailure", podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}))
    assert causes(r) == [("FieldValueInvalid", "spec.template.spec.restartPolicy",
                          'Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified')]


async def test_a_wrongly_typed_field_is_refused_as_go_decodes_it(client: httpx.AsyncClient) -> None:
    r = await client.post(JOBS, json=job(parallelism="two"))
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ('Job in version "v1" cannot be handled as a Job: json: cannot unmarshal string '
                                   'into Go struct field JobSpec.spec.parallelism of type int32')
    assert (await client.get(f"{JOBS}/pi")).status_code == 404


def _warnings(r: httpx.Response) -> list[str]:
    out = []
    for header in r.headers.get_list("warning"):
        assert header.startswith('299 - "') and header.endswith('"'), header
        out.append(header[len('299 - "'):-1].replace('\\"', '"'))
    return out


async def test_warnings_on_create_and_on_a_spec_update_as_the_job_strategy_sends_them(client: httpx.AsyncClient) -> None:
    # job strategy.go WarningsOnCreate: the DNS-label name warning, then WarningsForJobSpec (the pod
    # template's under spec.template); WarningsOnUpdate: WarningsForJobSpec when the generation moved.
    body = job("pi.v2", parallelism=1)
    body["spec"]["template"]["spec"]["nodeSelector"] = {"beta.kubernetes.io/os": "linux"}
    r = await client.post(JOBS, json=body)
    assert r.status_code == 201, r.text
    selector_warning = ('spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; '
                        'use "kubernetes.io/os" instead')
    got = _warnings(r)
    assert got == ["metadata.name: this is used in Pod names and hostnames, which can result in surprising "
                   "behavior; a DNS label is recommended: [must not contain dots]", selector_warning]
    merge = {"content-type": "application/merge-patch+json"}
    r = await client.patch(f"{JOBS}/pi.v2", json={"spec": {"parallelism": 2}}, headers=merge)
    assert r.status_code == 200, r.text
    assert _warnings(r) == [selector_warning]
    r = await client.patch(f"{JOBS}/pi.v2", json={"metadata": {"labels": {"x": "y"}}}, headers=merge)
    assert r.status_code == 200 and _warnings(r) == []  # the generation did not move
    r = await client.patch(f"{JOBS}/pi.v2/status", json={"status": {"active": 0}}, headers=merge)
    assert r.status_code == 200 and _warnings(r) == []


async def test_an_indexed_job_past_both_soft_limits_is_warned_of(client: httpx.AsyncClient) -> None:
    r = await client.post(JOBS, json=job("big", completionMode="Indexed", completions=100_001, parallelism=10_001))
    assert r.status_code == 201, r.text
    assert _warnings(r) == ["spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism "
                            "higher than 10^4, Kubernetes might not be able to track completedIndexes when a big "
                            "number of indexes fail"]
    r = await client.post(JOBS, json=job("small", completionMode="Indexed", completions=100_000, parallelism=10_001))
    assert r.status_code == 201 and _warnings(r) == []
