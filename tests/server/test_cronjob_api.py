"""batch/v1 CronJobs through the HTTP API: discovery, defaults, validation, generation, warnings, Table, /status.

Upstream (release 1.32): k/k ``pkg/apis/batch/v1/defaults.go`` ``SetDefaults_CronJob``;
``pkg/registry/batch/cronjob/strategy.go`` (PrepareForCreate/PrepareForUpdate, WarningsOnCreate/
WarningsOnUpdate, the status strategy); ``pkg/apis/batch/validation/validation.go`` (``ValidateCronJobCreate``,
``ValidateCronJobUpdate``, ``validateCronJobSpec``, ``validateScheduleFormat``, ``validateTimeZone``,
``ValidateJobTemplateSpec``) with robfig/cron v3's ``ParseStandard`` messages;
``pkg/printers/internalversion/printers.go`` ``printCronJob``.
"""

from __future__ import annotations

from typing import Any

import httpx

CRONJOBS = "/apis/batch/v1/namespaces/default/cronjobs"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def cronjob(name: str = "hello", schedule: str | None = "*/1 * * * *", *, restart: str = "OnFailure",
            job_spec: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "hello", "image": "busybox"}], "restartPolicy": restart}}
    body_spec: dict[str, Any] = {"jobTemplate": {"spec": {"template": template, **(job_spec or {})}}, **spec}
    if schedule is not None:
        body_spec["schedule"] = schedule
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name}, "spec": body_spec}


def causes(r: httpx.Response) -> list[tuple[str, str, str]]:
    assert r.status_code == 422, r.text
    status = r.json()
    assert (status["reason"], status["details"]["kind"], status["details"]["group"]) == ("Invalid", "CronJob", "batch")
    return [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]


async def created(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post(CRONJOBS, json=body)
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


async def nothing_stored(client: httpx.AsyncClient) -> None:
    assert (await client.get(CRONJOBS)).json()["items"] == []


async def test_cronjobs_are_discovered_with_short_name_cj_in_category_all(client: httpx.AsyncClient) -> None:
    resources = (await client.get("/apis/batch/v1")).json()["resources"]
    by_name = {r["name"]: r for r in resources}
    cj = by_name["cronjobs"]
    assert (cj["kind"], cj["namespaced"], cj["shortNames"], cj["categories"]) == ("CronJob", True, ["cj"], ["all"])
    assert "cronjobs/status" in by_name


async def test_create_defaults_the_spec_and_not_the_job_template(client: httpx.AsyncClient) -> None:
    body = await created(client, cronjob())
    spec = body["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    job_spec = spec["jobTemplate"]["spec"]
    # SetDefaults_Job is the Job's own: the template keeps no completions, parallelism or backoffLimit.
    assert not {"completions", "parallelism", "backoffLimit", "selector"} & set(job_spec)
    pod = job_spec["template"]["spec"]
    assert (pod["dnsPolicy"], pod["terminationGracePeriodSeconds"]) == ("ClusterFirst", 30)
    assert body["metadata"]["generation"] == 1 and body["status"] == {}


async def test_schedules_robfig_cron_refuses_are_invalid_with_its_message(client: httpx.AsyncClient) -> None:
    cases = {
        "61 * * * *": "end of range (61) above maximum (59): 61",
        "* * * *": "expected exactly 5 fields, found 4: [* * * *]",
        "0 0 * * * *": "expected exactly 5 fields, found 6: [0 0 * * * *]",
        "*/0 * * * *": "step of range should be a positive number: */0",
        "x * * * *": 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax',
        "* * * * 7": "end of range (7) above maximum (6): 7",
        "* * * foo *": 'failed to parse int from foo: strconv.Atoi: parsing "foo": invalid syntax',
        "5-1 * * * *": "beginning of range (5) beyond end of range (1): 5-1",
        "* * 0 * *": "beginning of range (0) below minimum (1): 0",
        "@every 5": 'failed to parse duration @every 5: time: missing unit in duration "5"',
        "@fortnightly": "unrecognized descriptor: @fortnightly",
    }
    for schedule, message in cases.items():
        r = await client.post(CRONJOBS, json=cronjob(schedule=schedule))
        assert causes(r) == [("FieldValueInvalid", "spec.schedule", f'Invalid value: "{schedule}": {message}')]
    await nothing_stored(client)
    r = await client.post(CRONJOBS, json=cronjob(schedule=None))
    assert causes(r) == [("FieldValueRequired", "spec.schedule", "Required value")]


async def test_descriptors_every_names_and_question_marks_are_valid_schedules(client: httpx.AsyncClient) -> None:
    for i, schedule in enumerate(("@hourly", "@every 1h30m", "@weekly", "0 9 ? JAN-jun mon-FRI", "*/15 0-23/2 1,15 * *")):
        assert (await created(client, cronjob(f"ok{i}", schedule)))["spec"]["schedule"] == schedule


async def test_tz_in_the_schedule_and_bad_time_zones_are_refused(client: httpx.AsyncClient) -> None:
    tz_message = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    r = await client.post(CRONJOBS, json=cronjob(schedule="TZ=UTC 0 * * * *"))
    assert causes(r) == [("FieldValueInvalid", "spec.schedule", f'Invalid value: "TZ=UTC 0 * * * *": {tz_message}')]
    r = await client.post(CRONJOBS, json=cronjob(schedule="CRON_TZ=Mars/Base 0 * * * *"))
    assert causes(r) == [
        ("FieldValueInvalid", "spec.schedule", 'Invalid value: "CRON_TZ=Mars/Base 0 * * * *": provided bad location '
                                               "Mars/Base: unknown time zone Mars/Base"),
        ("FieldValueInvalid", "spec.schedule", f'Invalid value: "CRON_TZ=Mars/Base 0 * * * *": {tz_message}')]
    zones = {
        "Europe/Pariss": ["unknown time zone Europe/Pariss"],
        "": ["timeZone must be nil or non-empty string"],
        "Local": ["timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"],
        "local": ["timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
                  "unknown time zone local"],
        "America/Buenos Aires": ["unknown time zone America/Buenos Aires"],
        "../etc/passwd": ["unknown time zone ../etc/passwd"],
    }
    for zone, messages in zones.items():
        r = await client.post(CRONJOBS, json=cronjob(timeZone=zone))
        assert causes(r) == [("FieldValueInvalid", "spec.timeZone", f'Invalid value: "{zone}": {m}') for m in messages]
    await nothing_stored(client)
    assert (await created(client, cronjob(timeZone="Europe/Paris")))["spec"]["timeZone"] == "Europe/Paris"


async def test_spec_fields_and_the_job_template_are_validated_in_upstream_order(client: httpx.AsyncClient) -> None:
    body = cronjob(startingDeadlineSeconds=-1, concurrencyPolicy="Sometimes", successfulJobsHistoryLimit=-2,
                   failedJobsHistoryLimit=-3, restart="Always",
                   job_spec={"selector": {"matchLabels": {"a": "b"}}, "manualSelector": True, "parallelism": -1})
    body["metadata"]["name"] = "n" * 53
    r = await client.post(CRONJOBS, json=body)
    found = causes(r)
    assert found[0] == ("FieldValueInvalid", "spec.startingDeadlineSeconds",
                        "Invalid value: -1: must be greater than or equal to 0")
    assert found[1] == ("FieldValueNotSupported", "spec.concurrencyPolicy",
                        'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"')
    assert found[2] == ("FieldValueInvalid", "spec.jobTemplate.spec.parallelism",
                        "Invalid value: -1: must be greater than or equal to 0")
    assert found[3][:2] == ("FieldValueRequired", "spec.jobTemplate.spec.template.spec.restartPolicy")
    assert found[4] == ("FieldValueInvalid", "spec.jobTemplate.spec.selector",
                        'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, MatchExpressions:'
                        "[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated")
    assert found[5] == ("FieldValueNotSupported", "spec.jobTemplate.spec.manualSelector",
                        'Unsupported value: true: supported values: "nil", "false"')
    assert found[6:] == [
        ("FieldValueInvalid", "spec.successfulJobsHistoryLimit", "Invalid value: -2: must be greater than or equal to 0"),
        ("FieldValueInvalid", "spec.failedJobsHistoryLimit", "Invalid value: -3: must be greater than or equal to 0"),
        ("FieldValueInvalid", "metadata.name", f'Invalid value: "{"n" * 53}": must be no more than 52 characters')]
    await nothing_stored(client)
    assert (await created(client, cronjob("n" * 52)))["metadata"]["name"] == "n" * 52


async def test_updates_bump_the_generation_on_spec_changes_and_refuse_adding_tz(client: httpx.AsyncClient) -> None:
    await created(client, cronjob())
    merge = {"content-type": "application/merge-patch+json"}
    r = await client.patch(f"{CRONJOBS}/hello", json={"spec": {"suspend": True}}, headers=merge)
    assert r.status_code == 200, r.text
    assert (r.json()["metadata"]["generation"], r.json()["spec"]["suspend"]) == (2, True)
    r = await client.patch(f"{CRONJOBS}/hello", json={"metadata": {"labels": {"x": "y"}}}, headers=merge)
    assert r.json()["metadata"]["generation"] == 2
    r = await client.patch(f"{CRONJOBS}/hello", json={"spec": {"schedule": "CRON_TZ=UTC 0 * * * *"}}, headers=merge)
    assert causes(r) == [("FieldValueInvalid", "spec.schedule", 'Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use '
                                                                "TZ or CRON_TZ in schedule, use timeZone field instead")]
    r = await client.patch(f"{CRONJOBS}/hello", json={"spec": {"timeZone": "Nowhere/Land"}}, headers=merge)
    assert causes(r) == [("FieldValueInvalid", "spec.timeZone", 'Invalid value: "Nowhere/Land": unknown time zone '
                                                                "Nowhere/Land")]
    stored = (await client.get(f"{CRONJOBS}/hello")).json()
    assert stored["spec"]["schedule"] == "*/1 * * * *" and "timeZone" not in stored["spec"]


def _warnings(r: httpx.Response) -> list[str]:
    out = []
    for header in r.headers.get_list("warning"):
        assert header.startswith('299 - "') and header.endswith('"'), header
        out.append(header[len('299 - "'):-1].replace('\\"', '"'))
    return out


async def test_warnings_name_the_job_template_fields(client: httpx.AsyncClient) -> None:
    # cronjob strategy.go WarningsOnCreate: the DNS-label name warning, then WarningsForJobSpec under
    # spec.jobTemplate.spec; WarningsOnUpdate: WarningsForJobSpec only when the generation moved.
    body = cronjob("nightly.v2")
    body["spec"]["jobTemplate"]["spec"]["template"]["spec"]["nodeSelector"] = {"beta.kubernetes.io/os": "linux"}
    r = await client.post(CRONJOBS, json=body)
    assert r.status_code == 201, r.text
    selector_warning = ('spec.jobTemplate.spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since '
                        'v1.14; use "kubernetes.io/os" instead')
    assert _warnings(r) == ["metadata.name: this is used in Pod names and hostnames, which can result in surprising "
                            "behavior; a DNS label is recommended: [must not contain dots]", selector_warning]
    merge = {"content-type": "application/merge-patch+json"}
    r = await client.patch(f"{CRONJOBS}/nightly.v2", json={"spec": {"schedule": "@daily"}}, headers=merge)
    assert r.status_code == 200 and _warnings(r) == [selector_warning]
    r = await client.patch(f"{CRONJOBS}/nightly.v2", json={"metadata": {"labels": {"x": "y"}}}, headers=merge)
    assert r.status_code == 200 and _warnings(r) == []


async def test_status_is_written_only_through_the_subresource(client: httpx.AsyncClient) -> None:
    body = await created(client, cronjob())
    active = [{"kind": "Job", "namespace": "default", "name": "hello-29000000", "uid": "u1", "apiVersion": "batch/v1"}]
    body["status"] = {"active": active, "lastScheduleTime": "2026-01-01T00:00:00Z"}
    body["spec"]["schedule"] = "@hourly"
    r = await client.put(f"{CRONJOBS}/hello/status", json=body)
    assert r.status_code == 200, r.text
    assert r.json()["status"]["active"] == active and r.json()["spec"]["schedule"] == "*/1 * * * *"
    assert r.json()["metadata"]["generation"] == 1
    body = r.json()
    body["status"] = {}
    r = await client.put(f"{CRONJOBS}/hello", json=body)  # the main resource keeps the status
    assert r.json()["status"]["active"] == active


async def test_table_has_print_cron_job_columns(client: httpx.AsyncClient) -> None:
    await created(client, cronjob(timeZone="Asia/Tokyo"))
    body = cronjob("other", "@daily")
    body["spec"]["suspend"] = True
    await created(client, body)
    r = await client.get(CRONJOBS, headers={"accept": TABLE})
    table = r.json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images", "Selector"]
    assert [c["type"] for c in table["columnDefinitions"]][3:5] == ["boolean", "integer"]
    cells = {row["cells"][0]: row["cells"] for row in table["rows"]}
    assert cells["hello"][1:6] == ["*/1 * * * *", "Asia/Tokyo", "False", 0, "<none>"]
    assert cells["other"][1:6] == ["@daily", "<none>", "True", 0, "<none>"]
    assert cells["hello"][7:] == ["hello", "busybox", "<none>"]


async def test_openapi_describes_cronjobs_from_the_built_in_schemas(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi/v3")).json()["paths"]
    doc = (await client.get("/" + paths["apis/batch/v1"]["serverRelativeURL"].lstrip("/"))).json()
    schema = doc["components"]["schemas"]["io.k8s.api.batch.v1.CronJobSpec"]
    assert {"schedule", "timeZone", "jobTemplate", "concurrencyPolicy"} <= set(schema["properties"])
    assert "/apis/batch/v1/namespaces/{namespace}/cronjobs/{name}/status" in doc["paths"]


async def test_a_wrongly_typed_field_is_refused_at_decode_with_go_message(client: httpx.AsyncClient) -> None:
    body = cronjob()
    body["spec"]["successfulJobsHistoryLimit"] = "three"
    r = await client.post(CRONJOBS, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == ('CronJob in version "v1" cannot be handled as a CronJob: json: cannot unmarshal '
                                   "string into Go struct field CronJobSpec.spec.successfulJobsHistoryLimit of type int32")
    await nothing_stored(client)
