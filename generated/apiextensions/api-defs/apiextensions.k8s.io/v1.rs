//! Group apiextensions.k8s.io, version v1: CustomResourceDefinitions, which add resources of
//! new kinds to the server.
#![group = "apiextensions.k8s.io"]
#![version = "v1"]
#![storage]
#![priority = 20]
#![proto_package = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"]

/// CustomResourceDefinition represents a resource that should be exposed on the API server.
/// Its name MUST be in the format <.spec.name>.<.spec.group>.
#[kind(cluster, status, short_names = ["crd", "crds"], categories = ["api-extensions"])]
pub struct CustomResourceDefinition {
    /// Standard object's metadata.
    #[proto(1)]
    pub metadata: ObjectMeta,
    /// spec describes how the user wants the resources to appear.
    #[proto(2)]
    pub spec: CustomResourceDefinitionSpec,
    /// status indicates the actual state of the CustomResourceDefinition.
    #[proto(3)]
    pub status: CustomResourceDefinitionStatus,
}

/// CustomResourceDefinitionSpec describes how a user wants their resource to appear.
pub struct CustomResourceDefinitionSpec {
    /// group is the API group of the defined custom resource. The custom resources are served
    /// under `/apis/<group>/...`. Must match the name of the CustomResourceDefinition (in the
    /// form `<names.plural>.<group>`).
    #[proto(1)]
    pub group: String,
    /// names specify the resource and kind names for the custom resource.
    #[proto(3)]
    pub names: CustomResourceDefinitionNames,
    /// scope indicates whether the defined custom resource is cluster- or namespace-scoped.
    /// Allowed values are `Cluster` and `Namespaced`.
    #[proto(4)]
    pub scope: String,
    /// versions is the list of all API versions of the defined custom resource. Version names
    /// are used to compute the order in which served versions are listed in API discovery.
    #[proto(7)]
    #[list(type = "atomic")]
    #[json(always)]
    pub versions: Vec<CustomResourceDefinitionVersion>,
    /// conversion defines conversion settings for the CRD.
    #[proto(9)]
    pub conversion: Option<CustomResourceConversion>,
    /// preserveUnknownFields indicates that object fields which are not specified in the
    /// OpenAPI schema should be preserved when persisting to storage. Deprecated: true is not
    /// allowed in v1; set x-kubernetes-preserve-unknown-fields in the schemas instead.
    #[proto(10, by_value)]
    pub preserve_unknown_fields: Option<bool>,
}

/// CustomResourceConversion describes how to convert different versions of a CR.
pub struct CustomResourceConversion {
    /// strategy specifies how custom resources are converted between versions. Allowed values
    /// are `None` (only the apiVersion changes) and `Webhook` (an external webhook converts).
    #[proto(1)]
    pub strategy: String,
    /// webhook describes how to call the conversion webhook. Required when `strategy` is set
    /// to `"Webhook"`.
    #[proto(2)]
    pub webhook: Option<WebhookConversion>,
}

/// WebhookConversion describes how to call a conversion webhook.
pub struct WebhookConversion {
    /// clientConfig is the instructions for how to call the webhook if strategy is `Webhook`.
    #[proto(2)]
    pub client_config: Option<WebhookClientConfig>,
    /// conversionReviewVersions is an ordered list of preferred `ConversionReview` versions
    /// the Webhook expects. The API server uses the first version in the list which it
    /// supports.
    #[proto(3)]
    #[list(type = "atomic")]
    #[json(always)]
    pub conversion_review_versions: Option<Vec<String>>,
}

/// WebhookClientConfig contains the information to make a TLS connection with the webhook.
pub struct WebhookClientConfig {
    /// url gives the location of the webhook, in standard URL form
    /// (`scheme://host:port/path`). Exactly one of `url` or `service` must be specified.
    #[proto(3)]
    pub url: Option<String>,
    /// service is a reference to the service for this webhook. Either service or url must be
    /// specified.
    #[proto(1)]
    pub service: Option<ServiceReference>,
    /// caBundle is a PEM encoded CA bundle which will be used to validate the webhook's server
    /// certificate. If unspecified, system trust roots on the apiserver are used.
    #[proto(2)]
    pub ca_bundle: Option<Bytes>,
}

/// ServiceReference holds a reference to Service.legacy.k8s.io.
pub struct ServiceReference {
    /// namespace is the namespace of the service.
    #[proto(1)]
    pub namespace: String,
    /// name is the name of the service.
    #[proto(2)]
    pub name: String,
    /// path is an optional URL path at which the webhook will be contacted.
    #[proto(3)]
    pub path: Option<String>,
    /// port is an optional service port at which the webhook will be contacted. Defaults to
    /// 443 for backward compatibility.
    #[proto(4)]
    #[default(443)]
    pub port: Option<i32>,
}

/// CustomResourceDefinitionVersion describes a version for CRD.
pub struct CustomResourceDefinitionVersion {
    /// name is the version name, e.g. "v1", "v2beta1", etc. The custom resources are served
    /// under this version at `/apis/<group>/<version>/...` if `served` is true.
    #[proto(1)]
    pub name: String,
    /// served is a flag enabling/disabling this version from being served via REST APIs.
    #[proto(2)]
    pub served: bool,
    /// storage indicates this version should be used when persisting custom resources to
    /// storage. There must be exactly one version with storage=true.
    #[proto(3)]
    pub storage: bool,
    /// deprecated indicates this version of the custom resource API is deprecated. When set
    /// to true, API requests to this version receive a warning header in the server response.
    #[proto(7, by_value)]
    pub deprecated: Option<bool>,
    /// deprecationWarning overrides the default warning returned to API clients. May only be
    /// set when `deprecated` is true.
    #[proto(8)]
    pub deprecation_warning: Option<String>,
    /// schema describes the schema used for validation, pruning, and defaulting of this
    /// version of the custom resource.
    #[proto(4)]
    pub schema: Option<CustomResourceValidation>,
    /// subresources specify what subresources this version of the defined custom resource have.
    #[proto(5)]
    pub subresources: Option<CustomResourceSubresources>,
    /// additionalPrinterColumns specifies additional columns returned in Table output. If no
    /// columns are specified, a single column displaying the age of the custom resource is used.
    #[proto(6)]
    #[list(type = "atomic")]
    pub additional_printer_columns: Vec<CustomResourceColumnDefinition>,
    /// selectableFields specifies paths to fields that may be used as field selectors. A
    /// maximum of 8 selectable fields are allowed.
    #[proto(9)]
    #[list(type = "atomic")]
    pub selectable_fields: Vec<SelectableField>,
}

/// SelectableField specifies the JSON path of a field that may be used with field selectors.
pub struct SelectableField {
    /// jsonPath is a simple JSON path which is evaluated against each custom resource to
    /// produce a field selector value.
    #[proto(1)]
    pub json_path: String,
}

/// CustomResourceColumnDefinition specifies a column for server side printing.
pub struct CustomResourceColumnDefinition {
    /// name is a human readable name for the column.
    #[proto(1)]
    pub name: String,
    /// type is an OpenAPI type definition for this column.
    #[proto(2)]
    pub type_: String,
    /// format is an optional OpenAPI type definition for this column.
    #[proto(3, by_value)]
    pub format: Option<String>,
    /// description is a human readable description of this column.
    #[proto(4, by_value)]
    pub description: Option<String>,
    /// priority is an integer defining the relative importance of this column compared to
    /// others. Lower numbers are considered higher priority.
    #[proto(5, by_value)]
    pub priority: Option<i32>,
    /// jsonPath is a simple JSON path which is evaluated against each custom resource to
    /// produce the value for this column.
    #[proto(6)]
    pub json_path: String,
}

/// CustomResourceDefinitionNames indicates the names to serve this CustomResourceDefinition.
pub struct CustomResourceDefinitionNames {
    /// plural is the plural name of the resource to serve. Must be all lowercase.
    #[proto(1)]
    pub plural: String,
    /// singular is the singular name of the resource. Defaults to lowercased `kind`.
    #[proto(2, by_value)]
    pub singular: Option<String>,
    /// shortNames are short names for the resource, exposed in API discovery documents.
    #[proto(3)]
    #[list(type = "atomic")]
    pub short_names: Vec<String>,
    /// kind is the serialized kind of the resource. It is normally CamelCase and singular.
    #[proto(4)]
    pub kind: String,
    /// listKind is the serialized kind of the list for this resource. Defaults to "`kind`List".
    #[proto(5, by_value)]
    pub list_kind: Option<String>,
    /// categories is a list of grouped resources this custom resource belongs to (e.g. 'all').
    #[proto(6)]
    #[list(type = "atomic")]
    pub categories: Vec<String>,
}

/// CustomResourceValidation is a list of validation methods for CustomResources.
pub struct CustomResourceValidation {
    /// openAPIV3Schema is the OpenAPI v3 schema to use for validation and pruning.
    #[proto(1)]
    #[json(name = "openAPIV3Schema")]
    pub open_api_v3_schema: Option<JSONSchemaProps>,
}

/// CustomResourceSubresources defines the status and scale subresources for CustomResources.
pub struct CustomResourceSubresources {
    /// status indicates the custom resource should serve a `/status` subresource.
    #[proto(1)]
    pub status: Option<CustomResourceSubresourceStatus>,
    /// scale indicates the custom resource should serve a `/scale` subresource that returns
    /// an `autoscaling/v1` Scale object.
    #[proto(2)]
    pub scale: Option<CustomResourceSubresourceScale>,
}

/// CustomResourceSubresourceStatus defines how to serve the status subresource for
/// CustomResources. Status is represented by the `.status` JSON path inside of a
/// CustomResource.
pub struct CustomResourceSubresourceStatus {}

/// CustomResourceSubresourceScale defines how to serve the scale subresource for
/// CustomResources.
pub struct CustomResourceSubresourceScale {
    /// specReplicasPath defines the JSON path inside of a custom resource that corresponds to
    /// Scale `spec.replicas`.
    #[proto(1)]
    pub spec_replicas_path: String,
    /// statusReplicasPath defines the JSON path inside of a custom resource that corresponds
    /// to Scale `status.replicas`.
    #[proto(2)]
    pub status_replicas_path: String,
    /// labelSelectorPath defines the JSON path inside of a custom resource that corresponds to
    /// Scale `status.selector`.
    #[proto(3)]
    pub label_selector_path: Option<String>,
}

/// CustomResourceDefinitionStatus indicates the state of the CustomResourceDefinition.
pub struct CustomResourceDefinitionStatus {
    /// conditions indicate state for particular aspects of a CustomResourceDefinition.
    #[proto(1)]
    #[list(type = "map", map_keys = ["type"])]
    #[json(always)]
    pub conditions: Option<Vec<CustomResourceDefinitionCondition>>,
    /// acceptedNames are the names that are actually being used to serve discovery. They may
    /// be different than the names in spec.
    #[proto(2)]
    pub accepted_names: CustomResourceDefinitionNames,
    /// storedVersions lists all versions of CustomResources that were ever persisted.
    /// Tracking these versions allows a migration path for stored versions in etcd.
    #[proto(3)]
    #[list(type = "atomic")]
    #[json(always)]
    pub stored_versions: Option<Vec<String>>,
    /// The generation observed by the CRD controller.
    #[proto(4, by_value)]
    pub observed_generation: Option<i64>,
}

/// CustomResourceDefinitionCondition contains details for the current condition of this
/// CustomResourceDefinition.
pub struct CustomResourceDefinitionCondition {
    /// type is the type of the condition. Types include Established, NamesAccepted and
    /// Terminating.
    #[proto(1)]
    pub type_: String,
    /// status is the status of the condition. Can be True, False, Unknown.
    #[proto(2)]
    pub status: String,
    /// lastTransitionTime last time the condition transitioned from one status to another.
    #[proto(3, by_value)]
    pub last_transition_time: Option<Time>,
    /// reason is a unique, one-word, CamelCase reason for the condition's last transition.
    #[proto(4, by_value)]
    pub reason: Option<String>,
    /// message is a human-readable message indicating details about last transition.
    #[proto(5, by_value)]
    pub message: Option<String>,
    /// observedGeneration represents the .metadata.generation that the condition was set
    /// based upon.
    #[proto(6, by_value)]
    pub observed_generation: Option<i64>,
}

/// ConversionReview describes a conversion request/response.
#[gvk(group = "apiextensions.k8s.io", version = "v1", kind = "ConversionReview")]
pub struct ConversionReview {
    /// APIVersion defines the versioned schema of this representation of an object.
    #[proto(skip)]
    #[json(name = "apiVersion")]
    pub api_version: Option<String>,
    /// Kind is a string value representing the REST resource this object represents.
    #[proto(skip)]
    pub kind: Option<String>,
    /// request describes the attributes for the conversion request.
    #[proto(1)]
    pub request: Option<ConversionRequest>,
    /// response describes the attributes for the conversion response.
    #[proto(2)]
    pub response: Option<ConversionResponse>,
}

/// ConversionRequest describes the conversion request parameters.
pub struct ConversionRequest {
    /// uid is an identifier for the individual request/response. It allows distinguishing
    /// instances of requests which are otherwise identical.
    #[proto(1)]
    pub uid: String,
    /// desiredAPIVersion is the version to convert given objects to. e.g. "myapi.example.com/v1"
    #[proto(2)]
    #[json(name = "desiredAPIVersion")]
    pub desired_api_version: String,
    /// objects is the list of custom resource objects to be converted.
    #[proto(3)]
    #[list(type = "atomic")]
    #[json(always)]
    pub objects: Option<Vec<RawExtension>>,
}

/// ConversionResponse describes a conversion response.
pub struct ConversionResponse {
    /// uid is an identifier for the individual request/response. This should be copied over
    /// from the corresponding `request.uid`.
    #[proto(1)]
    pub uid: String,
    /// convertedObjects is the list of converted version of `request.objects` if the `result`
    /// is successful, otherwise empty.
    #[proto(2)]
    #[list(type = "atomic")]
    #[json(always)]
    pub converted_objects: Option<Vec<RawExtension>>,
    /// result contains the result of conversion with extra details if the conversion failed.
    #[proto(3)]
    pub result: Status,
}

/// JSONSchemaProps is a JSON-Schema following Specification Draft 4 (http://json-schema.org/).
pub struct JSONSchemaProps {
    /// The schema's identifier (not supported in CustomResourceDefinitions).
    #[proto(1, by_value)]
    pub id: Option<String>,
    /// The URI of the JSON-Schema dialect (not supported in CustomResourceDefinitions).
    #[proto(2, by_value)]
    #[json(name = "$schema")]
    pub schema: Option<String>,
    /// A reference to another schema (not supported in CustomResourceDefinitions).
    #[proto(3)]
    #[json(name = "$ref")]
    pub ref_: Option<String>,
    /// A description of the value.
    #[proto(4, by_value)]
    pub description: Option<String>,
    /// The type of the value: object, array, string, integer, number or boolean.
    #[proto(5, by_value)]
    pub type_: Option<String>,
    /// format is an OpenAPI v3 format string, such as date-time or int32.
    #[proto(6, by_value)]
    pub format: Option<String>,
    /// A short title of the value.
    #[proto(7, by_value)]
    pub title: Option<String>,
    /// default is a default value for undefined object fields.
    #[proto(8)]
    pub default: Option<JSON>,
    /// The largest number allowed.
    #[proto(9)]
    pub maximum: Option<f64>,
    /// Whether the maximum itself is excluded.
    #[proto(10, by_value)]
    pub exclusive_maximum: Option<bool>,
    /// The smallest number allowed.
    #[proto(11)]
    pub minimum: Option<f64>,
    /// Whether the minimum itself is excluded.
    #[proto(12, by_value)]
    pub exclusive_minimum: Option<bool>,
    /// The longest string allowed.
    #[proto(13)]
    pub max_length: Option<i64>,
    /// The shortest string allowed.
    #[proto(14)]
    pub min_length: Option<i64>,
    /// A regular expression strings must match.
    #[proto(15, by_value)]
    pub pattern: Option<String>,
    /// The most items an array may have.
    #[proto(16)]
    pub max_items: Option<i64>,
    /// The fewest items an array must have.
    #[proto(17)]
    pub min_items: Option<i64>,
    /// Whether an array's items must be distinct.
    #[proto(18, by_value)]
    pub unique_items: Option<bool>,
    /// A number values must be a multiple of.
    #[proto(19)]
    pub multiple_of: Option<f64>,
    /// The values allowed.
    #[proto(20)]
    #[list(type = "atomic")]
    pub enum_: Vec<JSON>,
    /// The most properties an object may have.
    #[proto(21)]
    pub max_properties: Option<i64>,
    /// The fewest properties an object must have.
    #[proto(22)]
    pub min_properties: Option<i64>,
    /// The properties an object must have.
    #[proto(23)]
    #[list(type = "atomic")]
    pub required: Vec<String>,
    /// The schema of an array's items (a schema, or a list of schemas).
    #[proto(24)]
    pub items: Option<JSONSchemaPropsOrArray>,
    /// Schemas the value must match all of.
    #[proto(25)]
    #[list(type = "atomic")]
    pub all_of: Vec<JSONSchemaProps>,
    /// Schemas the value must match exactly one of.
    #[proto(26)]
    #[list(type = "atomic")]
    pub one_of: Vec<JSONSchemaProps>,
    /// Schemas the value must match at least one of.
    #[proto(27)]
    #[list(type = "atomic")]
    pub any_of: Vec<JSONSchemaProps>,
    /// A schema the value must not match.
    #[proto(28)]
    pub not: Option<Box<JSONSchemaProps>>,
    /// The schemas of an object's properties, by name.
    #[proto(29)]
    pub properties: BTreeMap<String, JSONSchemaProps>,
    /// The schema of an object's other properties, or whether they are allowed.
    #[proto(30)]
    pub additional_properties: Option<JSONSchemaPropsOrBool>,
    /// The schemas of properties whose names match a pattern.
    #[proto(31)]
    pub pattern_properties: BTreeMap<String, JSONSchemaProps>,
    /// Schemas or required properties that apply when a property is present.
    #[proto(32)]
    pub dependencies: BTreeMap<String, JSONSchemaPropsOrStringArray>,
    /// The schema of items beyond those of a list of item schemas, or whether they are allowed.
    #[proto(33)]
    pub additional_items: Option<JSONSchemaPropsOrBool>,
    /// Schemas other schemas may refer to.
    #[proto(34)]
    pub definitions: BTreeMap<String, JSONSchemaProps>,
    /// More documentation about the value.
    #[proto(35)]
    pub external_docs: Option<ExternalDocumentation>,
    /// An example value.
    #[proto(36)]
    pub example: Option<JSON>,
    /// Whether the value may be null.
    #[proto(37, by_value)]
    pub nullable: Option<bool>,
    /// x-kubernetes-preserve-unknown-fields stops the API server decoding step from pruning
    /// fields which are not specified in the validation schema.
    #[proto(38)]
    #[json(name = "x-kubernetes-preserve-unknown-fields")]
    pub x_kubernetes_preserve_unknown_fields: Option<bool>,
    /// x-kubernetes-embedded-resource defines that the value is an embedded Kubernetes
    /// runtime.Object, with TypeMeta and ObjectMeta.
    #[proto(39, by_value)]
    #[json(name = "x-kubernetes-embedded-resource")]
    pub x_kubernetes_embedded_resource: Option<bool>,
    /// x-kubernetes-int-or-string specifies that this value is either an integer or a string.
    #[proto(40, by_value)]
    #[json(name = "x-kubernetes-int-or-string")]
    pub x_kubernetes_int_or_string: Option<bool>,
    /// x-kubernetes-list-map-keys annotates an array with the x-kubernetes-list-type `map` by
    /// specifying the keys used as the index of the map.
    #[proto(41)]
    #[list(type = "atomic")]
    #[json(name = "x-kubernetes-list-map-keys")]
    pub x_kubernetes_list_map_keys: Vec<String>,
    /// x-kubernetes-list-type annotates an array to further describe its topology: atomic,
    /// set or map.
    #[proto(42)]
    #[json(name = "x-kubernetes-list-type")]
    pub x_kubernetes_list_type: Option<String>,
    /// x-kubernetes-map-type annotates an object to further describe its topology: granular
    /// or atomic.
    #[proto(43)]
    #[json(name = "x-kubernetes-map-type")]
    pub x_kubernetes_map_type: Option<String>,
    /// x-kubernetes-validations describes a list of validation rules written in the CEL
    /// expression language.
    #[proto(44)]
    #[list(type = "map", map_keys = ["rule"])]
    #[patch(strategy = "merge", merge_key = "rule")]
    #[json(name = "x-kubernetes-validations")]
    pub x_kubernetes_validations: Vec<ValidationRule>,
}

/// ValidationRule describes a validation rule written in the CEL expression language.
pub struct ValidationRule {
    /// rule represents the expression which will be evaluated by CEL.
    #[proto(1)]
    pub rule: String,
    /// message represents the message displayed when validation fails.
    #[proto(2, by_value)]
    pub message: Option<String>,
    /// messageExpression declares a CEL expression that evaluates to the validation failure
    /// message that is returned when this rule fails.
    #[proto(3, by_value)]
    pub message_expression: Option<String>,
    /// reason provides a machine-readable validation failure reason that is returned to the
    /// caller when a request fails this validation rule.
    #[proto(4)]
    pub reason: Option<String>,
    /// fieldPath represents the field path returned when the validation fails.
    #[proto(5, by_value)]
    pub field_path: Option<String>,
    /// optionalOldSelf is used to opt a transition rule into evaluation even when the object
    /// is first created, or if the old object is missing the value.
    #[proto(6)]
    pub optional_old_self: Option<bool>,
}

/// ExternalDocumentation allows referencing an external resource for extended documentation.
pub struct ExternalDocumentation {
    /// A description of the documentation.
    #[proto(1, by_value)]
    pub description: Option<String>,
    /// The documentation's URL.
    #[proto(2, by_value)]
    pub url: Option<String>,
}

/// JSON represents any valid JSON value. These types are supported: bool, int64, float64,
/// string, []interface{}, map[string]interface{} and nil.
#[json(custom)]
pub struct JSON {
    /// The JSON text of the value.
    #[proto(1)]
    pub raw: Option<Bytes>,
}

/// JSONSchemaPropsOrArray represents a value that can either be a JSONSchemaProps or an array
/// of JSONSchemaProps. Mainly here for serialization purposes.
#[json(custom)]
pub struct JSONSchemaPropsOrArray {
    /// The schema, when the value is one schema.
    #[proto(1)]
    pub schema: Option<Box<JSONSchemaProps>>,
    /// The schemas, when the value is an array of schemas.
    #[proto(2)]
    #[json(name = "jSONSchemas")]
    pub json_schemas: Vec<JSONSchemaProps>,
}

/// JSONSchemaPropsOrBool represents JSONSchemaProps or a boolean value. Defaults to true for
/// the boolean property.
#[json(custom)]
pub struct JSONSchemaPropsOrBool {
    /// Whether the value is allowed (true when a schema is given).
    #[proto(1)]
    pub allows: bool,
    /// The schema, when the value is a schema.
    #[proto(2)]
    pub schema: Option<Box<JSONSchemaProps>>,
}

/// JSONSchemaPropsOrStringArray represents a JSONSchemaProps or a string array.
#[json(custom)]
pub struct JSONSchemaPropsOrStringArray {
    /// The schema, when the value is a schema.
    #[proto(1)]
    pub schema: Option<Box<JSONSchemaProps>>,
    /// The property names, when the value is an array of strings.
    #[proto(2)]
    pub property: Vec<String>,
}
