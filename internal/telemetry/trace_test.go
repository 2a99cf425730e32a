package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/resource"
)

// TestConfigFromEnv: the standard OTEL_* variables choose the exporter,
// protocol and sampling, vmplane's own win where both are set, and
// OTEL_SDK_DISABLED turns export off whatever else says.
func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr bool
	}{
		{name: "nothing", env: nil, want: Config{}},
		{name: "an OTLP endpoint alone means otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"},
			want: Config{Exporter: "otlp"}},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			want: Config{Exporter: "otlp", Protocol: "http/protobuf"}},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, want: Config{Exporter: "stdout"}},
		{name: "vmplane's wins", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "VMPLANE_TRACE_EXPORTER": "otlp", "VMPLANE_OTLP_ENDPOINT": "c:4317"},
			want: Config{Exporter: "otlp", Endpoint: "c:4317"}},
		{name: "disabled", env: map[string]string{"OTEL_SDK_DISABLED": "TRUE", "VMPLANE_TRACE_EXPORTER": "stdout"}, want: Config{Exporter: "none"}},
		{name: "ratio", env: map[string]string{"VMPLANE_TRACE_SAMPLE_RATIO": "0.25"}, want: Config{SampleRatio: 0.25, SampleSet: true}},
		{name: "the SDK's sampler", env: map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}, want: Config{}},
		{name: "bad exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: true},
		{name: "bad protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: true},
		{name: "bad ratio", env: map[string]string{"VMPLANE_TRACE_SAMPLE_RATIO": "2"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigFromEnv(func(k string) string { return tc.env[k] }, "vmplane-test")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if tc.wantErr {
				return
			}
			tc.want.Service = "vmplane-test"
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestResourceFromEnv: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// win over the role's default service name.
func TestResourceFromEnv(t *testing.T) {
	attrs := func(r *resource.Resource) map[string]string {
		m := map[string]string{}
		for _, kv := range r.Attributes() {
			m[string(kv.Key)] = kv.Value.String()
		}
		return m
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	r, err := newResource(context.Background(), "vmplane-gateway")
	if err != nil {
		t.Fatal(err)
	}
	if got := attrs(r)["service.name"]; got != "vmplane-gateway" {
		t.Fatalf("default service.name %q", got)
	}
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=prod,service.name=from-attrs")
	t.Setenv("OTEL_SERVICE_NAME", "gw-eu-1")
	r, err = newResource(context.Background(), "vmplane-gateway")
	if err != nil {
		t.Fatal(err)
	}
	a := attrs(r)
	if a["service.name"] != "gw-eu-1" || a["deployment.environment.name"] != "prod" || a["telemetry.sdk.language"] != "go" {
		t.Fatalf("resource %v", a)
	}
}
