package web

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/scheduling"
)

// openAPISource describes the JSON API but for the schedule's own fields;
// a test keeps it in step with the routes registered in routes.go.
//
//go:embed openapi.json
var openAPISource []byte

// openAPIDocument is the served document: the source with every field of
// the field table (scheduling.Fields) documented in the create and update
// requests and in the schedule, from the field's one Schema.
var openAPIDocument = withScheduleFields(openAPISource)

func serveOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPIDocument)
}

// withScheduleFields adds the field table's fields to src's
// CreateScheduleRequest (as declared), UpdateScheduleRequest (no default;
// a nullable one says null clears it) and Schedule (no default; always
// present, so required). Both inputs are the program's own, so a
// malformed one panics when the program starts.
func withScheduleFields(src []byte) []byte {
	var doc map[string]any
	if err := json.Unmarshal(src, &doc); err != nil {
		panic(fmt.Sprintf("web/openapi.json: %v", err))
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	properties := func(name string) map[string]any {
		return schemas[name].(map[string]any)["properties"].(map[string]any)
	}
	schedule := schemas["Schedule"].(map[string]any)
	for _, f := range scheduling.Fields {
		if f.Schema == nil {
			continue
		}
		var create map[string]any
		if err := json.Unmarshal(f.Schema, &create); err != nil {
			panic(fmt.Sprintf("the schema of the field %s: %v", f.Key, err))
		}
		if f.Nullable {
			create["nullable"] = true
		}
		update, shown := maps.Clone(create), maps.Clone(create)
		delete(update, "default")
		delete(shown, "default")
		if d, ok := update["description"].(string); ok && f.Nullable {
			update["description"] = d + " null clears it."
		}
		properties("CreateScheduleRequest")[f.Key] = create
		properties("UpdateScheduleRequest")[f.Key] = update
		properties("Schedule")[f.Key] = shown
		schedule["required"] = append(schedule["required"].([]any), f.Key)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		panic(fmt.Sprintf("encode the OpenAPI document: %v", err))
	}
	return out.Bytes()
}
