//! The single pass over an AdmissionReview body.
//!
//! kube-apiserver writes `kind`, `subResource` and `operation` before `object` and `oldObject`,
//! so by the time the objects arrive we know whether a rule reads them: those that matter are
//! read straight into the views the rules use, the rest are skipped. A body whose fields come in
//! another order still works: objects met before we can decide are kept as raw JSON and read
//! afterwards.
//!
//! Two readers: on demand (by hand over [`crate::k8s::ondemand`]; skipped values are checked for
//! structure only) for the server, and serde_json throughout (the reference, where skipped
//! values are still checked to be JSON), which answers every body the first cannot. In the
//! reference a read that fails is repeated with every object kept raw, so the error names the
//! right field.

use std::borrow::Cow;
use std::fmt;

use kube::core::admission::Operation as KubeOperation;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{ReviewError, API_VERSION};
use crate::k8s::ondemand;
use crate::k8s::workload::{self, Kind, Part, PodTemplate, TemplateSeed};
use crate::rules::{self, ObjectKind, Operation, Phase, Request as RuleRequest, RuleSet};

pub(super) fn operation(op: &KubeOperation) -> Operation {
    match op {
        KubeOperation::Create => Operation::Create,
        KubeOperation::Update => Operation::Update,
        KubeOperation::Delete => Operation::Delete,
        KubeOperation::Connect => Operation::Connect,
    }
}

/// A name in the envelope, borrowed from the body when it has no escapes (serde's
/// `#[serde(borrow)] Cow<str>`): the review's kind and apiVersion, the request's kind and
/// operation are only compared, and an owned copy of each cost an allocation.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Text<'a>(Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Cow<'de, str>;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(s))
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(s.to_owned()))
            }

            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Cow::Owned(s))
            }
        }
        d.deserialize_str(TextVisitor).map(Text)
    }
}

/// kube-core's `GroupVersionKind` (all three required), borrowed; refused as serde refuses
/// kube-core's.
#[derive(Deserialize)]
#[serde(expecting = "struct GroupVersionKind")]
pub(super) struct Gvk<'a> {
    #[serde(borrow)]
    pub group: Text<'a>,
    /// Required as kube-core requires it; no rule reads it.
    #[serde(borrow)]
    #[expect(dead_code)]
    pub version: Text<'a>,
    #[serde(borrow)]
    pub kind: Text<'a>,
}

/// What a request's object is to us, decided from the request's kind, operation and subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Use {
    /// A rule reads its pod template, this much of it (on the on-demand path).
    Template(Kind, Part),
    /// A workload's UPDATE on `/mutate`: both objects are kept whole (raw), to tell whether its
    /// pod template changed. Defaults are added to a template only when it does: added to an
    /// unchanged one, they would roll out every pod of the workload.
    Compared(Kind),
    /// A WorkloadSpread to validate.
    Spread,
    /// No rule reads it.
    Ignore,
}

pub(super) fn use_of(
    kind: &Gvk,
    op: Operation,
    sub_resource: Option<&str>,
    old: bool,
    phase: Phase,
    rules: &RuleSet,
    cluster_aware: bool,
) -> Use {
    let request = rule_request(kind, op, sub_resource, phase, cluster_aware);
    use_for(request, old, rules)
}

/// [`use_of`] for the request as rules see it (`None`: no rule reads such a request).
fn use_for(request: Option<RuleRequest>, old: bool, rules: &RuleSet) -> Use {
    let Some(request) = request.filter(|r| !old || r.operation == Operation::Update) else {
        return Use::Ignore;
    };
    match request.kind {
        _ if !rules::applies(&rules.spec, request) => Use::Ignore,
        ObjectKind::Template(k)
            if request.phase == Phase::Mutate
                && request.operation == Operation::Update
                && k != Kind::Pod =>
        {
            Use::Compared(k)
        }
        ObjectKind::Template(k) => {
            let tolerations = rules::reads_tolerations(&rules.spec, request);
            Use::Template(
                k,
                if old {
                    Part {
                        tolerations,
                        ..Part::SCHEDULING
                    }
                } else {
                    Part {
                        identity: true,
                        resources: rules::reads_resources(&rules.spec, request),
                        tolerations,
                    }
                },
            )
        }
        ObjectKind::WorkloadSpread => Use::Spread,
    }
}

/// The request as rules see it; `None` when no rule reads requests of this kind or for a
/// subresource.
fn rule_request(
    kind: &Gvk,
    op: Operation,
    sub_resource: Option<&str>,
    phase: Phase,
    cluster_aware: bool,
) -> Option<RuleRequest> {
    if sub_resource.is_some_and(|s| !s.is_empty()) {
        return None;
    }
    let object = if &*kind.group == crate::kruise::workloadspread::GROUP
        && &*kind.kind == "WorkloadSpread"
    {
        ObjectKind::WorkloadSpread
    } else {
        ObjectKind::Template(Kind::from_group_kind(&kind.group, &kind.kind)?)
    };
    Some(RuleRequest {
        phase,
        operation: op,
        kind: object,
        cluster_aware,
    })
}

/// What the fields read so far (kind, operation, subresource) tell, when they can: the request
/// as rules see it (`None` inside when no rule reads such a request) and the rules to ask.
fn known<'r>(
    read: Read<'r>,
    kind: &Option<Gvk>,
    op: &Option<KubeOperation>,
    sub_resource: &Option<Option<String>>,
) -> Option<(Option<RuleRequest>, &'r RuleSet)> {
    let (
        Read::Direct {
            phase,
            rules,
            cluster_aware,
        },
        Some(k),
        Some(o),
    ) = (read, kind, op)
    else {
        return None;
    };
    let sub = sub_resource.as_ref().and_then(|s| s.as_deref());
    Some((
        rule_request(k, operation(o), sub, phase, cluster_aware),
        rules,
    ))
}

/// What [`known`] tells.
type Known<'r> = Option<(Option<RuleRequest>, &'r RuleSet)>;

/// [`known`] of the hand reader's fields, worked out once: `memo` is emptied when one of the
/// fields it reads is set (each is set once).
fn told<'r>(memo: &mut Option<Known<'r>>, read: Read<'r>, f: &Fields<()>) -> Known<'r> {
    *memo.get_or_insert_with(|| known(read, &f.kind, &f.op, &f.sub_resource))
}

/// Whether `userInfo` must be read: when the fields read so far cannot tell, or a rule that
/// applies reads it.
fn user_needed(known: Known<'_>) -> bool {
    known.is_none_or(|(request, rules)| request.is_some_and(|r| rules::reads_user(&rules.spec, r)))
}

/// Whether a rule that applies to the request reads a Pod UPDATE's tolerations where the
/// update left them as they were (yes when the fields read so far cannot tell).
fn unchanged_tolerations_read(known: Known<'_>) -> bool {
    known.is_none_or(|(request, rules)| {
        request.is_some_and(|r| rules::reads_unchanged_tolerations(&rules.spec, r))
    })
}

/// What an object met now is for, when the fields read so far can tell; `None` when it must be
/// kept raw and decided later.
fn decide(known: Known<'_>, old: bool) -> Option<Use> {
    known.map(|(request, rules)| use_for(request, old, rules))
}

/// How the objects are read.
#[derive(Clone, Copy)]
pub(super) enum Read<'r> {
    /// Into views as soon as we know what they are for.
    Direct {
        phase: Phase,
        rules: &'r RuleSet,
        cluster_aware: bool,
    },
    /// Kept raw: the second, explaining read after a direct read failed.
    Deferred,
}

/// One of the request's objects as the single pass left it.
pub(super) enum Slot<'de> {
    Absent,
    Read(Box<PodTemplate>),
    Raw(&'de RawValue),
    Skipped,
}

struct SlotSeed(Option<Use>);

impl<'de> DeserializeSeed<'de> for SlotSeed {
    type Value = Slot<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Slot<'de>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for SlotSeed {
    type Value = Slot<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Slot<'de>, E> {
        Ok(Slot::Absent)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Slot<'de>, E> {
        Ok(Slot::Absent)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Slot<'de>, D::Error> {
        Ok(match self.0 {
            Some(Use::Template(k, _)) => Slot::Read(Box::new(TemplateSeed(k).deserialize(d)?)),
            Some(Use::Ignore) => {
                IgnoredAny::deserialize(d)?;
                Slot::Skipped
            }
            Some(Use::Spread | Use::Compared(_)) | None => Slot::Raw(<&RawValue>::deserialize(d)?),
        })
    }
}

/// `request`: kube's `AdmissionRequest` with the same required fields, reading only what we use
/// (the resource, request kind and options are passed over), and the objects go through
/// [`SlotSeed`] (the reference) or are read by hand ([`direct_request`]).
pub(super) struct Request<'de> {
    pub uid: String,
    pub kind: Gvk<'de>,
    pub sub_resource: Option<String>,
    pub name: String,
    pub namespace: Option<String>,
    pub operation: KubeOperation,
    pub user_info: UserInfo,
    pub object: Slot<'de>,
    pub old_object: Slot<'de>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum RequestField {
    Uid,
    Kind,
    Resource,
    SubResource,
    RequestKind,
    RequestResource,
    RequestSubResource,
    Name,
    Namespace,
    Operation,
    UserInfo,
    Object,
    OldObject,
    DryRun,
    Options,
    #[serde(other)]
    Other,
}

const REQUEST_FIELDS: &[&str] = &[
    "uid",
    "kind",
    "resource",
    "subResource",
    "requestKind",
    "requestResource",
    "requestSubResource",
    "name",
    "namespace",
    "operation",
    "userInfo",
    "object",
    "oldObject",
    "dryRun",
    "options",
];

/// Reads a field's value, refusing a second occurrence as serde's derived structs do.
fn once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
    field: &'static str,
) -> Result<(), A::Error> {
    once_seed(slot, map, field, std::marker::PhantomData)
}

fn once_seed<'de, S: DeserializeSeed<'de>, A: MapAccess<'de>>(
    slot: &mut Option<S::Value>,
    map: &mut A,
    field: &'static str,
    seed: S,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(field));
    }
    *slot = Some(map.next_value_seed(seed)?);
    Ok(())
}

/// `userInfo`, without `uid` and `extra`.
#[derive(Deserialize)]
pub(super) struct UserInfo {
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub groups: Option<Vec<String>>,
}

/// The request's fields as either reader finds them; `S` stands for a value passed over.
#[derive(Default)]
struct Fields<'de, S> {
    uid: Option<String>,
    kind: Option<Gvk<'de>>,
    resource: Option<S>,
    sub_resource: Option<Option<String>>,
    request_kind: Option<S>,
    request_resource: Option<S>,
    request_sub_resource: Option<S>,
    name: Option<String>,
    namespace: Option<Option<String>>,
    op: Option<KubeOperation>,
    user_info: Option<UserInfo>,
    object: Option<Slot<'de>>,
    old_object: Option<Slot<'de>>,
    dry_run: Option<S>,
    options: Option<S>,
}

impl<'de, S> Fields<'de, S> {
    fn request<E: de::Error>(self) -> Result<Request<'de>, E> {
        Ok(Request {
            uid: self.uid.ok_or_else(|| E::missing_field("uid"))?,
            kind: self.kind.ok_or_else(|| E::missing_field("kind"))?,
            sub_resource: match self.resource {
                Some(_) => self.sub_resource.flatten(),
                None => return Err(E::missing_field("resource")),
            },
            name: self.name.unwrap_or_default(),
            namespace: self.namespace.flatten(),
            operation: self.op.ok_or_else(|| E::missing_field("operation"))?,
            user_info: self.user_info.ok_or_else(|| E::missing_field("userInfo"))?,
            object: self.object.unwrap_or(Slot::Absent),
            old_object: self.old_object.unwrap_or(Slot::Absent),
        })
    }
}

struct RequestVisitor<'r>(Read<'r>);

impl<'de> Visitor<'de> for RequestVisitor<'_> {
    type Value = Request<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct AdmissionRequest")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Request<'de>, A::Error> {
        let mut f = Fields::<IgnoredAny>::default();
        while let Some(field) = map.next_key::<RequestField>()? {
            match field {
                RequestField::Uid => once(&mut f.uid, &mut map, "uid")?,
                RequestField::Kind => once(&mut f.kind, &mut map, "kind")?,
                RequestField::Resource => once(&mut f.resource, &mut map, "resource")?,
                RequestField::SubResource => once(&mut f.sub_resource, &mut map, "subResource")?,
                RequestField::RequestKind => once(&mut f.request_kind, &mut map, "requestKind")?,
                RequestField::RequestResource => {
                    once(&mut f.request_resource, &mut map, "requestResource")?
                }
                RequestField::RequestSubResource => {
                    once(&mut f.request_sub_resource, &mut map, "requestSubResource")?
                }
                RequestField::Name => once(&mut f.name, &mut map, "name")?,
                RequestField::Namespace => once(&mut f.namespace, &mut map, "namespace")?,
                RequestField::Operation => once(&mut f.op, &mut map, "operation")?,
                RequestField::UserInfo => once(&mut f.user_info, &mut map, "userInfo")?,
                RequestField::Object | RequestField::OldObject => {
                    let old = matches!(field, RequestField::OldObject);
                    let (slot, field_name) = if old {
                        (&mut f.old_object, "oldObject")
                    } else {
                        (&mut f.object, "object")
                    };
                    let decided = decide(known(self.0, &f.kind, &f.op, &f.sub_resource), old);
                    once_seed(slot, &mut map, field_name, SlotSeed(decided))?;
                }
                RequestField::DryRun => once(&mut f.dry_run, &mut map, "dryRun")?,
                RequestField::Options => once(&mut f.options, &mut map, "options")?,
                RequestField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        f.request()
    }
}

struct RequestSeed<'r>(Read<'r>);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_> {
    type Value = Option<Request<'de>>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_> {
    type Value = Option<Request<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct AdmissionRequest")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_struct("AdmissionRequest", REQUEST_FIELDS, RequestVisitor(self.0))
            .map(Some)
    }
}

/// The AdmissionReview around the request.
pub(super) struct Review<'de> {
    api_version: Option<Text<'de>>,
    kind: Option<Text<'de>>,
    pub request: Option<Request<'de>>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum ReviewField {
    ApiVersion,
    Kind,
    Request,
    #[serde(other)]
    Other,
}

struct ReviewVisitor<'r>(Read<'r>);

impl<'de> Visitor<'de> for ReviewVisitor<'_> {
    type Value = Review<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct AdmissionReview")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Review<'de>, A::Error> {
        let mut api_version: Option<Option<Text<'de>>> = None;
        let mut kind: Option<Option<Text<'de>>> = None;
        let mut request: Option<Option<Request<'de>>> = None;
        while let Some(field) = map.next_key::<ReviewField>()? {
            match field {
                ReviewField::ApiVersion => once(&mut api_version, &mut map, "apiVersion")?,
                ReviewField::Kind => once(&mut kind, &mut map, "kind")?,
                ReviewField::Request => {
                    once_seed(&mut request, &mut map, "request", RequestSeed(self.0))?
                }
                ReviewField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Review {
            api_version: api_version.flatten(),
            kind: kind.flatten(),
            request: request.flatten(),
        })
    }
}

/// Which JSON reader reads the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonReader {
    /// [`crate::k8s::ondemand`]: values no rule reads are only checked for structure. A body it
    /// cannot answer is answered by [`JsonReader::Reference`] ([`super::review_in`]), so
    /// refusals are the reference's.
    OnDemand,
    /// serde_json throughout: the reference the on-demand reader is tested against.
    Reference,
}

pub(super) fn read_review<'de>(
    body: &'de [u8],
    read: Read<'_>,
) -> Result<Review<'de>, serde_json::Error> {
    fn run<'de, R: serde_json::de::Read<'de>>(
        mut de: serde_json::Deserializer<R>,
        read: Read<'_>,
    ) -> Result<Review<'de>, serde_json::Error> {
        let review = de::Deserializer::deserialize_map(&mut de, ReviewVisitor(read))?;
        de.end()?;
        Ok(review)
    }
    // One UTF-8 check of the whole body is cheaper than serde_json's check of every string it
    // reads from bytes; a body that fails it is read from bytes for serde_json's exact error.
    match simdutf8::basic::from_utf8(body) {
        Ok(text) => run(serde_json::Deserializer::from_str(text), read),
        Err(_) => run(serde_json::Deserializer::from_slice(body), read),
    }
}

/// The on-demand read of a UTF-8 body; with `skips`, the byte ranges of the values it skipped.
/// The envelope and the pod templates are read by hand ([`direct_review`],
/// [`workload::read_direct`]); a body of any other shape is an error, and the caller reads it
/// with the reference.
pub(super) fn read_review_on_demand<'de>(
    text: &'de str,
    read: Read<'_>,
    skips: Option<&mut Vec<std::ops::Range<usize>>>,
) -> Result<Review<'de>, serde_json::Error> {
    let mut de = ondemand::Deserializer::new(text);
    if skips.is_some() {
        de = de.record_skips();
    }
    let review = direct_review(&mut de, read)?;
    de.end()?;
    if let Some(s) = skips {
        s.extend_from_slice(de.skipped());
    }
    Ok(review)
}

/// Reads a field once: a repeat is serde's `duplicate field` error.
fn first<T>(slot: &Option<T>) -> Result<(), serde_json::Error> {
    match slot {
        Some(_) => Err(de::Error::custom("duplicate field")),
        None => Ok(()),
    }
}

/// [`ReviewVisitor`] by hand.
fn direct_review<'de>(
    de: &mut ondemand::Deserializer<'de>,
    read: Read<'_>,
) -> Result<Review<'de>, serde_json::Error> {
    let mut api_version: Option<Option<Text<'de>>> = None;
    let mut kind: Option<Option<Text<'de>>> = None;
    let mut request: Option<Option<Request<'de>>> = None;
    de.read_object(|de, key| {
        match key {
            "apiVersion" => {
                first(&api_version)?;
                api_version = Some(opt_text(de)?);
            }
            "kind" => {
                first(&kind)?;
                kind = Some(opt_text(de)?);
            }
            "request" => {
                first(&request)?;
                request = Some(if de.read_null() {
                    None
                } else {
                    Some(direct_request(de, read)?)
                });
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(Review {
        api_version: api_version.flatten(),
        kind: kind.flatten(),
        request: request.flatten(),
    })
}

/// [`RequestVisitor`] by hand.
fn direct_request<'de>(
    de: &mut ondemand::Deserializer<'de>,
    read: Read<'_>,
) -> Result<Request<'de>, serde_json::Error> {
    let mut f = Fields::<()>::default();
    let mut noted = workload::Noted::default();
    // A Pod UPDATE's new metadata, passed over until the old object says whether a rule reads it.
    let mut metadata_deferred = false;
    // Its tolerations, passed over until the old object says whether they changed.
    let mut tolerations_deferred = false;
    let mut memo = None;
    let skip = |slot: &mut Option<()>, de: &mut ondemand::Deserializer| {
        first(slot)?;
        *slot = Some(());
        de.skip_value()
    };
    de.read_object(|de, key| {
        match key {
            "uid" => {
                first(&f.uid)?;
                f.uid = Some(de.read_string()?);
            }
            "kind" => {
                first(&f.kind)?;
                f.kind = Some(gvk(de)?);
                memo = None;
            }
            "resource" => skip(&mut f.resource, de)?,
            "subResource" => {
                first(&f.sub_resource)?;
                f.sub_resource = Some(de.read_opt_string()?);
                memo = None;
            }
            "requestKind" => skip(&mut f.request_kind, de)?,
            "requestResource" => skip(&mut f.request_resource, de)?,
            "requestSubResource" => skip(&mut f.request_sub_resource, de)?,
            "name" => {
                first(&f.name)?;
                f.name = Some(de.read_string()?);
            }
            "namespace" => {
                first(&f.namespace)?;
                f.namespace = Some(de.read_opt_string()?);
            }
            "operation" => {
                first(&f.op)?;
                f.op = Some(match &*de.read_str()? {
                    "CREATE" => KubeOperation::Create,
                    "UPDATE" => KubeOperation::Update,
                    "DELETE" => KubeOperation::Delete,
                    "CONNECT" => KubeOperation::Connect,
                    _ => return Err(de::Error::custom("unknown operation")),
                });
                memo = None;
            }
            "userInfo" => {
                first(&f.user_info)?;
                // Passed over when no rule reads it (an object as the view requires, like
                // any skipped value checked for structure only).
                f.user_info = Some(
                    if !user_needed(told(&mut memo, read, &f)) && de.at_object() {
                        de.skip_value()?;
                        UserInfo {
                            username: None,
                            groups: None,
                        }
                    } else {
                        direct_user_info(de)?
                    },
                );
            }
            "object" | "oldObject" => {
                let old = key == "oldObject";
                let mut decided = decide(told(&mut memo, read, &f), old);
                let noting = !old
                    && f.object.is_none()
                    && f.op == Some(KubeOperation::Update)
                    && f.old_object.is_none();
                // A Pod UPDATE's new object, its extents noted: what rules read only in part
                // is passed over, to be read afterwards as the old object tells.
                if let (true, Some(Use::Template(Kind::Pod, part))) = (noting, &mut decided) {
                    metadata_deferred = part.identity;
                    part.identity = false;
                    if part.tolerations && !unchanged_tolerations_read(told(&mut memo, read, &f)) {
                        part.tolerations = false;
                        noted.pass_over_tolerations();
                        tolerations_deferred = true;
                    }
                }
                let mut echo = match (&f.object, old) {
                    _ if noting => workload::Echo::Note(&mut noted),
                    (Some(Slot::Read(new)), true) => workload::Echo::Reuse {
                        noted: &noted,
                        new,
                        top: 0,
                        spec: 0,
                        tolerations_taken: false,
                    },
                    _ => workload::Echo::Off,
                };
                first(if old { &f.old_object } else { &f.object })?;
                let value = Some(if de.read_null() {
                    Slot::Absent
                } else {
                    match decided {
                        Some(Use::Template(k, part)) => {
                            let mut t = Box::new(PodTemplate::empty(k));
                            workload::read_direct(k, part, de, &mut echo, &mut t)?;
                            Slot::Read(t)
                        }
                        Some(Use::Ignore) => {
                            de.skip_value()?;
                            Slot::Skipped
                        }
                        Some(Use::Spread | Use::Compared(_)) | None => {
                            Slot::Raw(<&RawValue>::deserialize(&mut *de)?)
                        }
                    }
                });
                if let workload::Echo::Reuse {
                    tolerations_taken: true,
                    ..
                } = echo
                {
                    tolerations_deferred = false;
                }
                if old {
                    f.old_object = value;
                } else {
                    f.object = value;
                }
            }
            "dryRun" => skip(&mut f.dry_run, de)?,
            "options" => skip(&mut f.options, de)?,
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    if let (true, Some(Slot::Read(new))) = (tolerations_deferred, &mut f.object) {
        if let Some(at) = noted.spec_value("tolerations") {
            new.spec.tolerations = de.reread(at, workload::pod_tolerations)?;
        }
    }
    let told_now = told(&mut memo, read, &f);
    if let (true, Some(Slot::Read(new))) = (metadata_deferred, &mut f.object) {
        let old = match &f.old_object {
            Some(Slot::Read(o)) => Some(&o.spec),
            _ => None,
        };
        let read_by_a_rule = told_now.is_none_or(|(request, rules)| {
            request.is_some_and(|r| rules::reads_metadata(&rules.spec, r, old, &new.spec))
        });
        // Not noted: absent or empty, as left.
        if let (true, Some(at)) = (read_by_a_rule, noted.top_value("metadata")) {
            new.meta = de.reread(at, workload::pod_metadata)?;
        }
    }
    f.request()
}

/// [`Gvk`] by hand.
fn gvk<'de>(de: &mut ondemand::Deserializer<'de>) -> Result<Gvk<'de>, serde_json::Error> {
    let (mut group, mut version, mut kind) = (None, None, None);
    de.read_object(|de, key| {
        let slot = match key {
            "group" => &mut group,
            "version" => &mut version,
            "kind" => &mut kind,
            _ => return de.skip_value(),
        };
        first(slot)?;
        *slot = Some(Text(de.read_str()?));
        Ok(())
    })?;
    Ok(Gvk {
        group: group.ok_or_else(|| de::Error::missing_field("group"))?,
        version: version.ok_or_else(|| de::Error::missing_field("version"))?,
        kind: kind.ok_or_else(|| de::Error::missing_field("kind"))?,
    })
}

/// `null` as `None`, else a [`Text`].
fn opt_text<'de>(
    de: &mut ondemand::Deserializer<'de>,
) -> Result<Option<Text<'de>>, serde_json::Error> {
    if de.read_null() {
        return Ok(None);
    }
    de.read_str().map(|s| Some(Text(s)))
}

/// [`UserInfo`] by hand.
fn direct_user_info(de: &mut ondemand::Deserializer) -> Result<UserInfo, serde_json::Error> {
    let mut username: Option<Option<String>> = None;
    let mut groups: Option<Option<Vec<String>>> = None;
    de.read_object(|de, key| {
        match key {
            "username" => {
                first(&username)?;
                username = Some(de.read_opt_string()?);
            }
            "groups" => {
                first(&groups)?;
                groups = Some(if de.read_null() {
                    None
                } else {
                    let mut g = Vec::new();
                    de.read_array(|de| {
                        g.push(de.read_string()?);
                        Ok(())
                    })?;
                    Some(g)
                });
            }
            _ => de.skip_value()?,
        }
        Ok(())
    })?;
    Ok(UserInfo {
        username: username.flatten(),
        groups: groups.flatten(),
    })
}

pub(super) fn parse_review<'de>(
    body: &'de [u8],
    reader: JsonReader,
    phase: Phase,
    rules: &RuleSet,
    cluster_aware: bool,
) -> Result<Request<'de>, ReviewError> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{')
        && serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
    {
        return Err(ReviewError::BadRequest(
            "request body is not an AdmissionReview: expected a JSON object".to_string(),
        ));
    }
    let direct = Read::Direct {
        phase,
        rules,
        cluster_aware,
    };
    let env = match reader {
        // simdutf8: a third of std's instructions on an ASCII body (SIMD chosen at run time).
        JsonReader::OnDemand => match simdutf8::basic::from_utf8(body) {
            Ok(text) => read_review_on_demand(text, direct, None),
            Err(e) => Err(serde::de::Error::custom(e)),
        },
        JsonReader::Reference => {
            read_review(body, direct).or_else(|_| read_review(body, Read::Deferred))
        }
    }
    .map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ReviewError::BadRequest(format!("request body is not valid JSON: {e}"))
        } else {
            ReviewError::BadRequest(format!("request body is not an AdmissionReview: {e}"))
        }
    })?;
    let kind = env.kind.unwrap_or_default();
    if &*kind != "AdmissionReview" {
        return Err(ReviewError::BadRequest(format!(
            "request body is not an AdmissionReview: kind is {:?}, expected \"AdmissionReview\"",
            &*kind
        )));
    }
    let api_version = env.api_version.unwrap_or_default();
    if &*api_version != API_VERSION {
        return Err(ReviewError::BadRequest(format!(
            "unsupported AdmissionReview apiVersion {:?}; this server speaks {API_VERSION:?} (set admissionReviewVersions: [v1])",
            &*api_version
        )));
    }
    let req = env
        .request
        .ok_or_else(|| ReviewError::BadRequest("AdmissionReview has no request".to_string()))?;
    Ok(req)
}

/// The pod template of an object a rule reads, whichever way the single pass left it.
pub(super) fn template_of(
    slot: Slot,
    kind: Kind,
    field: &str,
    op: Operation,
) -> Result<Box<PodTemplate>, ReviewError> {
    match slot {
        Slot::Read(t) => Ok(t),
        Slot::Raw(raw) => workload::parse_json(kind, raw.get())
            .map(Box::new)
            .map_err(|e| {
                let at = if e.path.is_empty() || e.path == "." {
                    String::new()
                } else {
                    format!(".{}", e.path)
                };
                ReviewError::BadRequest(format!(
                    "request.{field}{at}: cannot read {}: {}",
                    e.kind, e.message
                ))
            }),
        Slot::Absent => Err(ReviewError::BadRequest(format!(
            "request.{field} is required for {} of {}",
            op.as_str(),
            kind.resource()
        ))),
        // `use_of` only grows stricter as later fields arrive, so a skipped object stays unused.
        Slot::Skipped => Err(ReviewError::Internal(format!(
            "request.{field} was skipped but is needed"
        ))),
    }
}
